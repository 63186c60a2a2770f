"""The SIMD flags of this machine's CPU, recorded with speed benchmarks (the
kernels TensorFlow, oneDNN and CTranslate2 can use depend on them)."""

SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw",
              "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile",
              "amx_bf16", "amx_int8")


def _cpuinfo_field(name):
    """The value of the first `name` line of /proc/cpuinfo, or None."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def simd_flags():
    """The SIMD flags of this CPU (from /proc/cpuinfo) among `SIMD_FLAGS`."""
    have = set((_cpuinfo_field("flags") or "").split())
    return [flag for flag in SIMD_FLAGS if flag in have]


def cpu_model():
    """The CPU's model name (from /proc/cpuinfo), or None."""
    return _cpuinfo_field("model name")
