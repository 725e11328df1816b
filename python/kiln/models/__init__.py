"""kiln.models: pretrained-model architectures written with kiln.nn that load
checkpoints in their original format (diffusers' AutoencoderKL and AutoencoderKLWan, ...)."""

from .autoencoder_kl import AutoencoderKL, DiagonalGaussianDistribution  # noqa: F401
from .autoencoder_kl_wan import AutoencoderKLWan  # noqa: F401

__all__ = ["AutoencoderKL", "AutoencoderKLWan", "DiagonalGaussianDistribution"]
