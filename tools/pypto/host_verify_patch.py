"""The one place where tune-ledger changes pypto's behaviour: pass-verify on a host without CANN.

Why (PYPTO.md, "Numerical outputs"; checked again with pypto 0.2.0 on this host):
1. `JitCallableWrapper._setup_verify_data` hands the verifier *copies* of the kernel's
   tensors made with `pypto_impl.CopyToHost`, which is a no-op in the runtime stub that
   loads without CANN: the verifier interprets the graph on all-zero inputs and compares
   garbage. In SIM mode the tensors already live in host memory, so we hand the verifier
   the real CPU buffers instead.
2. `BuildOnlineManager.build_and_load_calculator` rebuilds the verifier's C++ "calculator"
   library with cmake into a fresh temporary folder in every process (~35 s). We build it
   once per (pypto, torch, calculator sources) into a cache folder and load it from there.

Scope and guards:
- Active only without CANN (`ASCEND_HOME_PATH` unset). With CANN, pypto's own host copy is
  the real one and nothing is patched.
- Written for pypto 0.2.0 exactly; any other version is refused with `PatchRefused`, and so
  is 0.2.0 whose patched functions no longer have the source they had when this was written
  (`FINGERPRINTS`; tests/test_pypto_patch.py checks them too and fails loudly).
- The cache folder: `$TUNE_LEDGER_PYPTO_CACHE`, else `~/.cache/tune-ledger/pypto`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import inspect
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

SUPPORTED_VERSION = "0.2.0"
CALCULATOR_LIB = "lib/libtile_fwk_calculator.so"

# sha256 of inspect.getsource(...) of each pypto function this module replaces or relies on,
# taken from pypto 0.2.0. A change means the workaround must be re-checked, not re-applied.
FINGERPRINTS = {
    "frontend.parser.entry.JitCallableWrapper._setup_verify_data": (
        "ac411d5078cfb2e4b62c1c240e378e42884f60fcca52260d79a9f7b039e823f2"
    ),
    "frontend.parser.entry._pto_to_tensor_data": (
        "2a9041406d58583553b3b1ab85e765cab471e3f5e314f3064b70045efed8a9cb"
    ),
    "_utils.BuildOnlineManager.build_and_load_calculator": (
        "31990c4974df4fe570965a90a0a7de04cb2e93bc45f8239bbcf88be7479bb145"
    ),
    "runtime._CachedVerifyData.get_data": (
        "9d98164301cd66d8898ef5422919c52e6e897dfd8598479fb2d1394458552902"
    ),
}


class PatchRefused(RuntimeError):
    """The installed pypto is not the one this workaround was written and checked for."""


def cann_present() -> bool:
    """True when a CANN toolkit is configured (then pypto's own host copy works)."""
    return bool(os.environ.get("ASCEND_HOME_PATH"))


def installed_version() -> str:
    return metadata.version("pypto")


def _targets() -> dict[str, Any]:
    """The pypto objects named in FINGERPRINTS (imports pypto)."""
    from pypto import _utils, runtime
    from pypto.frontend.parser import entry

    wrapper = entry.JitCallableWrapper
    setup = getattr(wrapper, "_tune_ledger_original", None)  # pypto's own, once patched
    return {
        "frontend.parser.entry.JitCallableWrapper._setup_verify_data": setup
        or wrapper.__dict__["_setup_verify_data"].__func__,
        "frontend.parser.entry._pto_to_tensor_data": entry._pto_to_tensor_data,
        "_utils.BuildOnlineManager.build_and_load_calculator": getattr(
            wrapper, "_tune_ledger_original_build", None
        )
        or _utils.BuildOnlineManager.build_and_load_calculator,
        "runtime._CachedVerifyData.get_data": runtime._CachedVerifyData.get_data,
    }


def current_fingerprints() -> dict[str, str]:
    """sha256 of the source of each relied-on pypto function, as installed now."""
    return {
        name: hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()
        for name, obj in _targets().items()
    }


def check_supported() -> None:
    """Raise PatchRefused unless pypto is exactly the version and code this was written for."""
    version = installed_version()
    if version != SUPPORTED_VERSION:
        raise PatchRefused(
            f"host_verify_patch was written for pypto {SUPPORTED_VERSION}, found {version}: "
            "pass-verify numerics are disabled. Re-check PYPTO.md's workaround against this "
            "version (tests/test_pypto_patch.py), then update SUPPORTED_VERSION/FINGERPRINTS."
        )
    changed = sorted(
        name for name, digest in current_fingerprints().items() if FINGERPRINTS.get(name) != digest
    )
    if changed:
        raise PatchRefused(
            f"pypto {version} internals differ from the ones host_verify_patch relies on: "
            f"{', '.join(changed)}; pass-verify numerics are disabled."
        )


def cache_root() -> Path:
    env = os.environ.get("TUNE_LEDGER_PYPTO_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "tune-ledger" / "pypto"


def activate() -> str:
    """Apply the workaround when it is needed; returns what was done, for the run record.

    Raises PatchRefused on an unsupported pypto (the caller reports that no numerics exist).
    """
    if cann_present():
        return "not applied: CANN present (ASCEND_HOME_PATH set)"
    check_supported()
    from pypto import _utils
    from pypto.frontend.parser import entry

    wrapper = entry.JitCallableWrapper
    if getattr(wrapper, "_tune_ledger_original", None) is not None:
        return "applied"
    library = calculator_library()

    def load_cached_calculator(self: Any) -> None:
        if not self.calculator_loaded:
            ctypes.CDLL(os.fspath(library), mode=ctypes.RTLD_GLOBAL)
            self.calculator_loaded = True

    original = wrapper.__dict__["_setup_verify_data"].__func__
    wrapper._tune_ledger_original_build = _utils.BuildOnlineManager.build_and_load_calculator
    wrapper._tune_ledger_original = original
    _utils.BuildOnlineManager.build_and_load_calculator = load_cached_calculator
    wrapper._setup_verify_data = staticmethod(_verify_with_host_buffers(original))
    return "applied"


def _verify_with_host_buffers(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def setup(pto_tensors: Any) -> None:
        import pypto
        import torch
        from pypto import pypto_impl
        from pypto.frontend.parser import entry
        from pypto.runtime import _pto_verify_datas

        if not pypto.get_verify_options().get("enable_pass_verify"):
            return
        if any(t.device != torch.device("cpu") for t in pto_tensors):
            original(pto_tensors)  # device tensors: pypto's own copy path
            return
        from pypto._utils import BuildOnlineManager

        BuildOnlineManager().build_and_load_calculator()
        # The tensors are host memory already: give the verifier the buffers themselves.
        pypto_impl.SetVerifyData(
            entry._pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data()
        )

    return setup


# ---------------------------------------------------------------- the calculator cache


def _calculator_sources() -> Path:
    import pypto

    return Path(pypto.__file__).resolve().parent / "lib" / "calculator"


def _cache_key(sources: Path) -> str:
    import torch

    digest = hashlib.sha256()
    digest.update(
        f"pypto={installed_version()};torch={torch.__version__};"
        f"abi={int(torch._C._GLIBCXX_USE_CXX11_ABI)}".encode()
    )
    for path in sorted(p for p in sources.rglob("*") if p.is_file()):
        digest.update(path.relative_to(sources).as_posix().encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:20]


def calculator_cached() -> bool:
    """Whether the calculator library is built already (else the next run builds it)."""
    try:
        sources = _calculator_sources()
    except Exception:  # noqa: BLE001 - pypto internals moved: activate() reports it properly
        return True
    return (cache_root() / f"calculator-{_cache_key(sources)}" / CALCULATOR_LIB).is_file()


def calculator_library() -> Path:
    """The cached calculator library, built first if absent (a file lock serializes builders)."""
    sources = _calculator_sources()
    root = cache_root()
    target = root / f"calculator-{_cache_key(sources)}"
    library = target / CALCULATOR_LIB
    if library.is_file():
        return library
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{target.name}.lock"):
        if not library.is_file():
            _build_calculator(sources, target)
    return library


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_calculator(sources: Path, target: Path) -> None:
    import torch

    from ledger import processes  # once per machine: not paid by every kernel's child

    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError(
            "cmake not found: pass-verify needs cmake and g++ to build pypto's "
            "calculator library once (apt-get install cmake g++)"
        )
    work = Path(tempfile.mkdtemp(prefix="calculator-build-", dir=target.parent))
    try:
        build, install = work / "build", work / "install"
        torch_root = Path(torch.__file__).resolve().parent
        commands = [
            [
                cmake,
                "-S",
                os.fspath(sources),
                "-B",
                os.fspath(build),
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DCMAKE_INSTALL_PREFIX={install}",
                f"-DPY3_MOD_TORCH_VERSION={torch.__version__}",
                f"-DPY3_MOD_TORCH_ROOT_PATH={torch_root}",
                f"-DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
            ],
            [cmake, "--build", os.fspath(build), "-j", str(os.cpu_count() or 2)],
            [cmake, "--install", os.fspath(build), "--prefix", os.fspath(install)],
        ]
        for command in commands:
            done = processes.run(command)
            if done.exit_code != 0:
                raise RuntimeError(
                    f"building pypto's calculator failed: {' '.join(command)}\n"
                    f"{done.text()[-2000:]}"
                )
        if not (install / CALCULATOR_LIB).is_file():
            raise RuntimeError(f"the calculator build produced no {CALCULATOR_LIB}")
        os.replace(install, target)  # atomic: readers see the whole library or none
    finally:
        shutil.rmtree(work, ignore_errors=True)
