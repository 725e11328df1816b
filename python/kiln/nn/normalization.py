"""kiln.nn's group and instance normalization layers (torch.nn.GroupNorm,
InstanceNorm1d/2d/3d: same arguments, parameter and buffer names, init)."""

import warnings

from .. import _C
from . import functional as F
from .module import Module
from .parameter import Parameter


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"[GroupNorm] num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_C.ones(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_C.zeros(num_channels, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(Module):
    _no_batch_dim = 2  # the dims of an unbatched input

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_C.ones(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_C.zeros(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", _C.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", _C.zeros((), dtype=_C.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input):
        name = type(self).__name__
        nb = self._no_batch_dim
        if input.dim() not in (nb, nb + 1):
            raise ValueError(f"[{name}] expected {nb}D (unbatched) or {nb + 1}D (batched) input, "
                             f"got {input.dim()}D input")
        feature_dim = input.dim() - nb
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"[{name}] expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), got {input.shape[feature_dim]}")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features; "
                          "num_features is not used as affine=False")
        unbatched = input.dim() == nb
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    _no_batch_dim = 4
