"""The torch half of ``kiln.bench_train``: the same MLP, CNN and transformer-ish block in
torch, timed the same way. It imports numpy and torch only, never kiln, so that
``python -m kiln.bench_train --peer-python PATH`` can run it as a script under an
interpreter that has torch but no kiln: it then reads the weights, data and batch
order from the .npz named on its command line and the config as JSON on stdin,
and prints {"torch_version", "threads", "mlp_epoch_s": [...], "cnn_epoch_s": [...],
"block_step_s": {name: [...]}} as JSON.
"""

import json
import math
import sys
import time

import numpy as np


def _mlp(torch, weights, dropout):
    nn = torch.nn
    m = nn.Sequential(nn.Linear(64, weights["0.weight"].shape[0]), nn.ReLU(), nn.Dropout(dropout),
                      nn.Linear(weights["3.weight"].shape[1], 10))
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.from_numpy(weights[name]))
    return m


def _cnn(torch, weights):
    """kiln.examples.train_digits.make_cnn in torch: [N, 1, 8, 8] -> [N, 10]."""
    nn = torch.nn
    c1, c2 = weights["0.weight"].shape[0], weights["3.weight"].shape[0]
    m = nn.Sequential(nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(c2 * 2 * 2, 10))
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.from_numpy(weights[name]))
    return m


def epoch_s(torch, model, x, y, orders, lr):
    """Seconds of each epoch of Adam on `model` over the given batch orders."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    out = []
    for batches in orders:
        t0 = time.perf_counter()
        for idx in batches:
            i = torch.from_numpy(idx)
            loss = loss_fn(model(xt[i]), yt[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()
        out.append(time.perf_counter() - t0)
    return out


def block_step_s(torch, case, params, x, steps):
    """Seconds of each forward+backward step of the block (params: numpy arrays)."""
    F = torch.nn.functional
    ps = {k: torch.from_numpy(v).requires_grad_() for k, v in params.items()}
    xt = torch.from_numpy(x)
    b, t, d, h = case["batch"], case["seq"], case["dim"], case["heads"]
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        for p in ps.values():
            p.grad = None
        hn = F.rms_norm(xt, (d,), ps["norm"], 1e-6)
        q, k, v = F.linear(hn, ps["wqkv"]).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d // h)), dim=-1)
        o = (att @ v).transpose(1, 2).reshape(b, t, d)
        loss = (xt + F.linear(o, ps["wo"])).square().mean()
        loss.backward()
        out.append(time.perf_counter() - t0)
    return out


def run(torch, cfg, arrays):
    """The whole torch side for one config (see kiln.bench_train.peer_config)."""
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    torch.manual_seed(0)
    weights = {k[len("mlp/"):]: arrays[k] for k in arrays if k.startswith("mlp/")}
    cnn = {k[len("cnn/"):]: arrays[k] for k in arrays if k.startswith("cnn/")}
    n = len(arrays["x"])
    bs = cfg["batch_size"]
    orders = []
    for e in range(cfg["epochs"]):
        perm = arrays["order"][e]
        orders.append([perm[i:i + bs] for i in range(0, n, bs)])
    doc = {"torch_version": torch.__version__, "threads": torch.get_num_threads(),
           "mlp_epoch_s": epoch_s(torch, _mlp(torch, weights, cfg["dropout"]), arrays["x"], arrays["y"], orders,
                                  cfg["lr"]),
           "cnn_epoch_s": epoch_s(torch, _cnn(torch, cnn), arrays["x"].reshape(-1, 1, 8, 8), arrays["y"], orders,
                                  cfg["cnn_lr"]),
           "block_step_s": {}}
    for case in cfg["blocks"]:
        pre = "block/" + case["name"] + "/"
        params = {k[len(pre):]: arrays[k] for k in arrays if k.startswith(pre) and not k.endswith("/x")}
        doc["block_step_s"][case["name"]] = block_step_s(torch, case, params, arrays[pre + "x"], cfg["steps"])
    return doc


def main():
    import torch

    cfg = json.load(sys.stdin)
    with np.load(sys.argv[1]) as z:
        arrays = {k: z[k] for k in z.files}
    json.dump(run(torch, cfg, arrays), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
