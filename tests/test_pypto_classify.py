"""Sorting failed PyPTO runs: a compile failure says why, not where in the C++ stack."""

from __future__ import annotations

from tools.pypto import classify

# The first lines of pypto's own log of a real compile failure (softmax, vec tile
# [4,32,1,256], unroll [4,1]; pypto 0.2.0), and the exception text of the same run.
PLOG = (
    "[ERROR] PYPTO(12424):2026-12-03 06:47:37.152 [schedule_base.h:358][PASS]:"
    "[OoOScheduleBase.Operation]:OP SUB[10015] in/output total size [262144] exceeds "
    "MEM_UB size [196608]!\n"
    "[ERROR] PYPTO(12424):2026-12-03 06:47:37.152 [schedule_base.h:423][PASS]:"
    "[OoOScheduleBase.Operation]:SUB[10015] checkOpBufferSize failed!\n"
    "[ERROR] PYPTO(12424):2026-12-03 06:47:37.152 [pass.cpp:79][PASS]:[Pass.Function]:"
    "Run pass [OoOSchedule] failed.\n"
)
ERROR = (
    "RenderedParserError: Errcode: FFFFFF!\n"
    "Run pass failed., func CompileFunction, file host_machine.cpp, line 179\n"
    "libtile_fwk_interface.so(npu::tile_fwk::HostMachine::CompileFunction(npu::tile_fwk::"
    "Function*) const+0x584) [0x7f23d5801664]\n"
)


def _classify(error_text: str, log_text: str = "") -> classify.Failure | None:
    return classify.classify(
        timed_out=False,
        over_memory=False,
        returncode=1,
        error_text=error_text,
        wall_limit_s=300,
        memory_limit_mb=6144,
        peak_rss_mb=900,
        log_text=log_text,
    )


def test_a_compile_failure_names_the_first_error_of_pypto_log() -> None:
    """The cause is pypto's first logged error, with the error code, not the stack tail."""
    failure = _classify(ERROR, PLOG)
    assert failure == classify.Failure(
        "compile",
        "OP SUB[10015] in/output total size [262144] exceeds MEM_UB size [196608]! "
        "(Errcode FFFFFF: Run pass failed)",
    )


def test_without_a_log_the_first_line_that_is_not_a_stack_frame_is_kept() -> None:
    """No log: the detail is the error's first meaningful line, never a library address."""
    failure = _classify(ERROR)
    assert failure is not None and failure.category == "compile"
    assert failure.detail.startswith("Run pass failed., func CompileFunction")
    assert "0x" not in failure.detail


def test_any_f_errcode_is_a_compile_failure() -> None:
    """`Errcode: F...!` alone (no "Run pass failed") is the compiler refusing the config."""
    failure = _classify("RuntimeError: Errcode: F10001!\nOnly allow to expand one axis! x\n")
    assert failure == classify.Failure(
        "compile", "Only allow to expand one axis! x (Errcode F10001)"
    )


def test_the_log_parser_ignores_other_lines() -> None:
    """Lines that are not `[ERROR] PYPTO(...)` lines are not causes."""
    assert classify.first_log_error("[INFO] PYPTO(1):d t [a.h:1]:[X]:fine\nplain text\n") is None
