"""Trains an MLP on scikit-learn's 8x8 digits with kiln.nn and kiln.optim:
``python -m kiln.examples.train_digits [--epochs 30] [--seed 0]``.

Linear(64, 128) - ReLU - Dropout - Linear(128, 10), CrossEntropyLoss, Adam,
mini-batches of 32, features standardized with the training split's mean and
std. The split, the initial weights, the dropout masks and the batch order all
follow from --seed, so a run is repeatable. Needs scikit-learn only for the
data (they ship inside it; nothing is downloaded).
"""

import argparse
import resource
import sys
import time

import numpy as np

import kiln
from kiln import nn

TEST_FRACTION = 0.2


def load_split(seed=0):
    """(x_train, y_train, x_test, y_test) as numpy: x float32 [n, 64] standardized
    with the training statistics, y int64 [n]; a fixed permutation from `seed`."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(seed).permutation(len(x))
    n_test = int(round(len(x) * TEST_FRACTION))
    test, train = order[:n_test], order[n_test:]
    mean = x[train].mean(axis=0)
    std = x[train].std(axis=0)
    std[std == 0] = 1.0  # pixels that are always blank in the training split
    z = ((x - mean) / std).astype(np.float32)
    return z[train], y[train].astype(np.int64), z[test], y[test].astype(np.int64)


def make_mlp(hidden=128, dropout=0.1):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10))


def batch_orders(n, batch_size, epochs, seed):
    """One list of index arrays per epoch: a fresh shuffle of range(n) cut into batches."""
    rng = np.random.RandomState(seed + 1)
    orders = []
    for _ in range(epochs):
        perm = rng.permutation(n)
        orders.append([perm[i:i + batch_size] for i in range(0, n, batch_size)])
    return orders


def accuracy(model, x, y):
    """Fraction of rows of x whose argmax logit is y (model in eval mode, no graph)."""
    model.eval()
    with kiln.no_grad():
        pred = model(kiln.tensor(x)).argmax(-1).numpy()
    model.train()
    return float((pred == y).mean())


def train(epochs=30, batch_size=32, lr=1e-3, seed=0, log=None):
    """Trains from scratch; returns {"test_accuracy", "train_accuracy", "losses" (mean
    per epoch), "epoch_s" (wall seconds per epoch), "peak_rss_bytes"}."""
    x_train, y_train, x_test, y_test = load_split(seed)
    kiln.manual_seed(seed)
    model = make_mlp()
    opt = kiln.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    losses, epoch_s = [], []
    for epoch, batches in enumerate(batch_orders(len(x_train), batch_size, epochs, seed)):
        t0 = time.perf_counter()
        total = 0.0
        for idx in batches:
            loss = loss_fn(model(kiln.tensor(x_train[idx])), kiln.tensor(y_train[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        epoch_s.append(time.perf_counter() - t0)
        losses.append(total / len(x_train))
        if log is not None:
            log(f"epoch {epoch + 1:3d}  loss {losses[-1]:.4f}  {epoch_s[-1] * 1e3:.1f} ms")
    return {
        "test_accuracy": accuracy(model, x_test, y_test),
        "train_accuracy": accuracy(model, x_train, y_train),
        "losses": losses,
        "epoch_s": epoch_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kiln.examples.train_digits", description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    r = train(args.epochs, args.batch_size, args.lr, args.seed, log=print)
    print(f"test accuracy {r['test_accuracy']:.4f}  train accuracy {r['train_accuracy']:.4f}")
    print(f"median epoch {sorted(r['epoch_s'])[len(r['epoch_s']) // 2] * 1e3:.1f} ms  "
          f"peak RSS {r['peak_rss_bytes'] / 2**20:.1f} MiB  ({kiln.get_num_threads()} threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
