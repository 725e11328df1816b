"""kiln.nn.Module: parameter, buffer and submodule bookkeeping as torch.nn.Module."""

from collections import OrderedDict

from .. import _C
from .._grad_mode import no_grad
from .parameter import Parameter


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class of kiln's layers; subclasses define forward()."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'[Module] {type(self).__name__} is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- registration ----
    def _check_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"[{what}] name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'[{what}] name can\'t contain "." or be empty, got {name!r}')
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"[{what}] cannot assign before Module.__init__() call")

    def register_parameter(self, name, param):
        self._check_name(name, "register_parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"[register_parameter] attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"[register_parameter] cannot assign '{type(param).__name__}' object to parameter "
                f"'{name}' (kiln.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_name(name, "register_buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"[register_buffer] attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"[register_buffer] cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (kiln.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"[add_module] {type(module).__name__} is not a Module subclass")
        self._check_name(name, "add_module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"[add_module] attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            if "_parameters" not in d:
                raise AttributeError("[Module] cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d)
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("[Module] cannot assign module before Module.__init__() call")
            self._remove_from(name, d)
            self._modules[name] = value
        elif "_parameters" in d and name in self._parameters:
            if value is not None:
                raise TypeError(f"[Module] cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(kiln.nn.Parameter or None expected)")
            self._parameters[name] = None
        elif "_modules" in d and name in self._modules:
            if value is not None:
                raise TypeError(f"[Module] cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(kiln.nn.Module or None expected)")
            self._modules[name] = None
        elif "_buffers" in d and name in self._buffers:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"[Module] cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(kiln.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _remove_from(self, name, d):
        d.pop(name, None)
        for k in ("_parameters", "_buffers", "_modules"):
            if k in d:
                d[k].pop(name, None)
        if "_non_persistent_buffers" in d:
            d["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            if k in d and name in d[k]:
                return d[k][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for k in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(k, ()):
                del self.__dict__[k][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # ---- iteration ----
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, kind, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mp, m in mods:
            for k, v in getattr(m, kind).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield mp + ("." if mp else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes and transforms ----
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("[Module.train] training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = _C.zeros_like(p.grad)

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Converts floating-point parameters and buffers to a dtype and/or moves
        them to a device (Module.to(dtype), .to(device), .to(device, dtype)).
        Parameters are replaced by new Parameters (same names, requires_grad kept)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"[Module.to] unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            else:
                device = a

        def conv(t):
            if device is not None:
                t = t.to(device)
            if dtype is not None and t.dtype.is_floating_point:
                t = t.to(dtype)
            return t

        with no_grad():
            for m in self.modules():
                for k, p in list(m._parameters.items()):
                    if p is not None:
                        q = conv(p)
                        if q is not p:
                            m._parameters[k] = Parameter(q, requires_grad=p.requires_grad)
                for k, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[k] = conv(b)
        return self

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    def bfloat16(self):
        return self.to(_C.bfloat16)

    def half(self):
        return self.to(_C.float16)

    # ---- state dict ----
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies state_dict's tensors into the parameters and persistent buffers.
        Returns (missing_keys, unexpected_keys); strict raises RuntimeError for either."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, dst in own.items():
            if k not in state_dict:
                continue
            src = state_dict[k]
            if tuple(src.shape) != tuple(dst.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape {tuple(src.shape)} from "
                              f"checkpoint, the shape in current model is {tuple(dst.shape)}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"[load_state_dict] Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for k, dst in own.items():
                if k in state_dict:
                    if assign:
                        self._assign(k, state_dict[k])
                    else:
                        dst.copy_(state_dict[k])
        return missing, unexpected

    def _assign(self, key, value):
        mod = self
        *path, leaf = key.split(".")
        for part in path:
            mod = mod._modules[part]
        if leaf in mod._parameters:
            old = mod._parameters[leaf]
            mod._parameters[leaf] = Parameter(value, requires_grad=old.requires_grad)
        else:
            mod._buffers[leaf] = value

    # ---- repr ----
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            lines.append("(" + name + "): " + _addindent(repr(m), 2))
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
