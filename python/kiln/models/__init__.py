"""kiln.models: pretrained-model architectures written with kiln.nn that load
checkpoints in their original format (diffusers' AutoencoderKL, ...)."""

from .autoencoder_kl import AutoencoderKL, DiagonalGaussianDistribution  # noqa: F401

__all__ = ["AutoencoderKL", "DiagonalGaussianDistribution"]
