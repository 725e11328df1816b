"""kiln.optim.Adam and AdamW: torch.optim's updates, one fused C++ pass per parameter
(state exp_avg, exp_avg_sq, max_exp_avg_sq in float32; step as a float32 scalar tensor)."""

from .. import _C
from .._grad_mode import no_grad
from .optimizer import Optimizer, _float32_state


class Adam(Optimizer):
    _decoupled = False
    _fn = "_optim_adam_step"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        name = type(self).__name__
        if not 0.0 <= lr:
            raise ValueError(f"[{name}] Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"[{name}] Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"[{name}] Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"[{name}] Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"[{name}] Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        fn = getattr(_C, self._fn)
        with no_grad():
            for g, p in self._params_with_grad():
                beta1, beta2 = g["betas"]
                state = self.state[p]
                if not state:
                    state["step"] = _C.tensor(0.0)
                    state["exp_avg"] = _float32_state(p)
                    state["exp_avg_sq"] = _float32_state(p)
                    if g["amsgrad"]:
                        state["max_exp_avg_sq"] = _float32_state(p)
                step = int(state["step"].item()) + 1
                state["step"] = _C.tensor(float(step))
                fn(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"), step,
                   float(g["lr"]), float(beta1), float(beta2), float(g["eps"]), float(g["weight_decay"]),
                   bool(g["amsgrad"]), bool(g["maximize"]))
        return loss


class AdamW(Adam):
    _decoupled = True
    _fn = "_optim_adamw_step"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused)
