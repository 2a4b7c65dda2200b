"""PyTorch DDP's bucket-size rule, the one Python copy (the C++ one is config::DdpSettings in
sim/config/specs.hpp; the two are compared by tests/python/test_zoo.py and check_buckets_vs_ddp.py).

- cap = int(bucket_cap_mb * 1024 * 1024) (torch/nn/parallel/distributed.py), default 25 MiB;
- first bucket = dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB); since PyTorch 2.x the user's cap when
  bucket_cap_mb was given explicitly; an explicit first_bucket_mb wins over both.
"""

DEFAULT_CAP_MB = 25.0
DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
               "double": 8, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


def cap_bytes(bucket_cap_mb=None):
    """Bucket cap in bytes; None means PyTorch's default."""
    return int((DEFAULT_CAP_MB if bucket_cap_mb is None else float(bucket_cap_mb)) * 1024 * 1024)


def recent_pytorch(pytorch_version):
    return not str(pytorch_version).startswith("1.")


def first_bucket_bytes(bucket_cap_mb=None, pytorch_version="1.13", first_bucket_mb=None):
    """The rebuild's first limit; bucket_cap_mb None means the default cap was kept."""
    if first_bucket_mb is not None:
        return int(float(first_bucket_mb) * 1024 * 1024)
    if recent_pytorch(pytorch_version) and bucket_cap_mb is not None:
        return cap_bytes(bucket_cap_mb)
    return DEFAULT_FIRST_BUCKET_BYTES
