"""scripts/sass_report.py (issue 40: the kernels' SASS without a GPU) on hand-written cuobjdump output.

The figures below are counted by hand from the text, not by the script.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("sass_report", ROOT / "scripts" / "sass_report.py")
sass_report = importlib.util.module_from_spec(_spec)
sys.modules["sass_report"] = sass_report  # (dataclasses look their module up)
_spec.loader.exec_module(sass_report)

# Two kernels in cuobjdump -sass's layout (every instruction line followed by its encoding line).
SASS = """
Fatbin elf code:
================
arch = sm_90

	code for sm_90
		Function : _Z6insertPKvPv
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                       /* 0x00000a00ff017b82 */
                                                                                /* 0x000fe20000000800 */
        /*0010*/                   S2R R20, SR_TID.X ;                          /* 0x0000000000147919 */
        /*0020*/                   LDG.E.128.CONSTANT R4, desc[UR10][R2.64] ;   /* 0x0000000a02047981 */
        /*0030*/                   LDG.E.U16 R8, desc[UR10][R2.64+0x10] ;       /* 0x0000000a02087981 */
        /*0040*/                   IMAD.WIDE.U32 R2, R3, UR4, R20 ;             /* 0x0000000403027c25 */
        /*0050*/                   F2FP.SATFINITE.E4M3.F32.PACK_AB R9, R5, R4 ; /* 0x000000040509723e */
        /*0060*/                   DMUL R10, R10, R12 ;                         /* 0x0000000c0a0a7228 */
        /*0070*/              @!P0 BRA 0x40 ;                                   /* 0x0000000000348947 */
        /*0080*/                   CALL.REL.NOINC 0x100 ;                       /* 0x0000001000cc7944 */
        /*0090*/                   STG.E.U8 desc[UR10][R2.64], R9 ;             /* 0x0000000902007986 */
        /*00a0*/                   STG.E.128 desc[UR10][R2.64], R4 ;            /* 0x0000000402007986 */
        /*00b0*/                   BRA 0xd0 ;                                   /* 0x0000000000547947 */
        /*00c0*/                   NOP ;                                        /* 0x0000000000007918 */
        /*00d0*/                   EXIT ;                                       /* 0x000000000000794d */
		..........
		Function : _Z6gatherPKvPv
        /*0000*/                   LDG.E.64 R2, desc[UR4][R2.64] ;              /* 0x0000000402027981 */
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;                 /* 0x0000000402047981 */
        /*0020*/                   I2F.U32 R5, R4 ;                             /* 0x0000000400057306 */
        /*0030*/                   FFMA R5, R5, R6, R7 ;                        /* 0x0000000605057223 */
        /*0040*/                   SHFL.IDX PT, R6, R5, RZ, 0x1f ;              /* 0x00001fff05067589 */
        /*0050*/                   BRA 0x50 ;                                   /* 0x0000000000007947 */
"""

RES_USAGE = """
Fatbin elf code:
================
 Resource usage:
 Common:
  GLOBAL:0
 Function _Z6gatherPKvPv:
  REG:26 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:600 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z6insertPKvPv:
  REG:53 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:664 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_parse_sass_counts_instructions_loops_and_accesses_by_width():
    insert, gather = sass_report.parse_sass(SASS)
    assert insert.mangled == "_Z6insertPKvPv" and gather.mangled == "_Z6gatherPKvPv"
    # 14 instruction lines, the NOP apart
    assert insert.instructions == 13
    assert insert.loops == 1  # BRA 0x40 at 0x70 goes back; BRA 0xd0 at 0xb0 forward
    assert insert.calls == 1
    assert dict(insert.loads) == {16: 1, 2: 1}
    assert dict(insert.stores) == {1: 1, 16: 1}
    assert insert.mix["f2fp"] == 1 and insert.mix["fp64"] == 1 and insert.mix["integer"] == 1
    assert insert.mix["conversion"] == 0
    assert gather.instructions == 6
    assert gather.loops == 1  # a branch to itself
    assert dict(gather.loads) == {8: 1, 4: 1}
    assert not gather.stores
    assert gather.mix["conversion"] == 1 and gather.mix["fp32"] == 1 and gather.mix["warp"] == 1


def test_parse_registers_per_kernel():
    assert sass_report.parse_registers(RES_USAGE) == {"_Z6gatherPKvPv": 26, "_Z6insertPKvPv": 53}


def test_short_name_drops_namespaces_and_parameters():
    name = ("void dsv4::cache::cuda::detail::generic_gather_kernel<dsv4::cache::formats::v41_fp8, dsv4::cache::bf16>"
            "(dsv4::cache::format_layout, dsv4::cache::format_policy, long const*)")
    assert sass_report.short_name(name) == "generic_gather_kernel<v41_fp8, bf16>"


def _fake_tools(directory) -> None:
    """A cuobjdump that prints the text above, and an nvdisasm beside it, as the PyPI wheels unpack."""
    bin_dir = directory / "nvidia" / "cu13" / "bin"
    bin_dir.mkdir(parents=True)
    (directory / "sass.txt").write_text(SASS)
    (directory / "res.txt").write_text(RES_USAGE)
    script = (f'#!/bin/sh\ncase "$1" in -sass) cat "{directory}/sass.txt" ;; -res-usage) cat "{directory}/res.txt" ;;'
              ' *) exit 1 ;; esac\n')
    for tool, text in (("cuobjdump", script), ("nvdisasm", "#!/bin/sh\nexit 0\n")):
        p = bin_dir / tool
        p.write_text(text)
        p.chmod(p.stat().st_mode | stat.S_IXUSR)


def test_report_end_to_end_with_the_tools_of_a_fetch_directory(tmp_path, capsys):
    _fake_tools(tmp_path)
    binary = tmp_path / "kernels.bin"
    binary.write_bytes(b"\0")
    assert sass_report.main([str(binary), "--tools", str(tmp_path), "--json"]) == 0
    got = {k["mangled"]: k for k in json.loads(capsys.readouterr().out)}
    assert got["_Z6insertPKvPv"]["registers"] == 53 and got["_Z6insertPKvPv"]["instructions"] == 13
    assert got["_Z6insertPKvPv"]["global_loads"] == {"16": 1, "2": 1}
    assert got["_Z6gatherPKvPv"]["registers"] == 26 and got["_Z6gatherPKvPv"]["loops"] == 1
    assert sass_report.main([str(binary), "--tools", str(tmp_path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 3 and table[0].startswith("kernel")


def test_missing_binary_exits_2(tmp_path, capsys):
    assert sass_report.main([str(tmp_path / "none")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_failing_cuobjdump_exits_3(tmp_path, capsys):
    _fake_tools(tmp_path)
    (tmp_path / "sass.txt").unlink()  # cat fails: cuobjdump exits non-zero
    binary = tmp_path / "kernels.bin"
    binary.write_bytes(b"\0")
    assert sass_report.main([str(binary), "--tools", str(tmp_path)]) == 3
    assert "cuobjdump -sass" in capsys.readouterr().err
    assert os.path.isfile(binary)
