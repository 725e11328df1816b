"""kiln.optim.Optimizer: param_groups, per-parameter state, zero_grad and
state_dict / load_state_dict in torch.optim's layout."""

import copy

from .. import _C


class _ParamState(dict):
    """The optimizer's state: a mapping param -> dict keyed by the parameter object
    itself (kiln.Tensor compares elementwise, so entries are found by identity)."""

    def __init__(self):
        super().__init__()
        self._params = {}

    def __getitem__(self, p):
        k = id(p)
        if not dict.__contains__(self, k):
            self._params[k] = p
            dict.__setitem__(self, k, {})
        return dict.__getitem__(self, k)

    def __setitem__(self, p, v):
        self._params[id(p)] = p
        dict.__setitem__(self, id(p), v)

    def __contains__(self, p):
        return dict.__contains__(self, id(p))

    def get(self, p, default=None):
        return dict.get(self, id(p), default)

    def keys(self):
        return [self._params[k] for k in dict.keys(self)]

    def __iter__(self):
        return iter(self.keys())

    def items(self):
        return [(self._params[k], v) for k, v in dict.items(self)]


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = _ParamState()
        self.param_groups = []
        if isinstance(params, _C.Tensor):
            raise TypeError("[Optimizer] params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a kiln.Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("[Optimizer] got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"[Optimizer] param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        param_group["params"] = [params] if isinstance(params, _C.Tensor) else list(params)
        for p in param_group["params"]:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"[Optimizer] can only optimize kiln.Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("[Optimizer] can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            param_group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("[Optimizer] some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                p.grad = None if set_to_none else _C.zeros_like(p.grad)

    def step(self, closure=None):
        raise NotImplementedError


    def _closure_loss(self, closure):
        """closure's loss, evaluated with gradients on as torch's step(closure)
        does; None without one."""
        if closure is None:
            return None
        from .._grad_mode import enable_grad

        with enable_grad():
            return closure()

    def _params_with_grad(self):
        """(group, parameter) for every parameter that has a gradient."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    yield g, p

    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}; parameters
        are numbered in param_groups order, as torch."""
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("[Optimizer.load_state_dict] loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("[Optimizer.load_state_dict] loaded state dict contains a parameter group that "
                                 "doesn't match the size of optimizer's group")
        by_index = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = p
        self.state = _ParamState()
        for i, s in state_dict["state"].items():
            p = by_index[int(i)]
            self.state[p] = {k: (v.clone() if isinstance(v, _C.Tensor) else copy.deepcopy(v)) for k, v in s.items()}
        for mine, theirs in zip(self.param_groups, groups):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = copy.deepcopy(v)

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"


def _float32_state(p):
    return _C.zeros(*p.shape, dtype=_C.float32)
