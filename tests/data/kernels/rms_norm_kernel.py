"""RMS norm over the last axis, written for the priors scanner tests (never run)."""

import pypto

HIDDEN = 4096


@pypto.frontend.jit(
    runtime_options={
        "run_mode": pypto.RunMode.SIM,
        "stitch_function_max_num": 64,
        "device_sched_mode": 1,
    },
    pass_options={"vec_nbuffer_setting": {-1: 2}},
)
def rms_norm_kernel(x: pypto.Tensor, w: pypto.Tensor, y: pypto.Tensor):
    pypto.set_vec_tile_shapes(1, 16, 64)
    batch = x.shape[0]
    for b, rows in pypto.loop_unroll(0, batch, 1, unroll_list=[8, 4, 2, 1]):
        block = x[b : b + rows, :, :]
        for h in pypto.loop(0, HIDDEN // 512, 1, name="hidden", unroll_list=[4, 1]):
            part = block[:, :, h * 512 : (h + 1) * 512]
            scale = pypto.rsqrt(pypto.mean(part * part, dim=-1, keepdim=True) + 1e-6)
            y[b : b + rows, :, h * 512 : (h + 1) * 512] = part * scale * w
