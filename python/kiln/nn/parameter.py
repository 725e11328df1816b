"""kiln.nn.Parameter: a kiln.Tensor subclass that requires grad (torch.nn.Parameter)."""

from .. import _C


class Parameter(_C.Tensor):
    """A tensor that is a module parameter: a new leaf sharing ``data``'s memory.

    ``isinstance(p, kiln.nn.Parameter)`` holds, and assigning one to a Module
    attribute registers it. Results of ops on a Parameter are plain kiln.Tensors.
    """

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        elif not isinstance(data, _C.Tensor):
            data = _C.tensor(data)
        # detach(): a new leaf with its own autograd state, the same storage.
        super().__init__(data.detach())
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
