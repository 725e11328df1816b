"""kiln.optim.SGD: torch.optim.SGD's update, one fused C++ pass per parameter."""

from .. import _C
from .._grad_mode import no_grad
from .optimizer import Optimizer, _float32_state


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"[SGD] Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"[SGD] Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"[SGD] Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("[SGD] Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with no_grad():
            for g, p in self._params_with_grad():
                state = self.state[p]
                buf = state.get("momentum_buffer")
                first = buf is None
                if g["momentum"] != 0 and buf is None:
                    buf = state["momentum_buffer"] = _float32_state(p)
                elif g["momentum"] == 0:
                    state["momentum_buffer"] = None
                _C._optim_sgd_step(p, p.grad, buf, float(g["lr"]), float(g["momentum"]), float(g["dampening"]),
                                   float(g["weight_decay"]), bool(g["nesterov"]), bool(g["maximize"]), first)
        return loss
