// Instruction -> sync class, one row per idiom. The SASS strings are copied from cuobjdump
// output of fixtures/sync_classes.cu (nvcc 13, sm_90/100/120); see kernels/audit/README.md.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fusioncheck/audit/sync_classes.hpp"

namespace fusioncheck::audit {
namespace {

struct Row {
  const char* instruction;
  std::optional<std::string> expected;
};

TEST(AuditSyncClasses, SassInstructions) {
  const Row rows[] = {
      {"ACQBULK", "griddep.wait"},
      {"PREEXIT", "griddep.trigger"},
      {"MEMBAR.SC.GPU", "fence.gpu"},
      {"MEMBAR.SC.SYS", "fence.sys"},
      {"MEMBAR.SC.CTA", "fence.cta"},
      {"MEMBAR.ALL.SYS", "fence.sys"},
      {"@P0 MEMBAR.ALL.SYS", "fence.sys"},
      {"FENCE.VIEW.ASYNC.S", "fence.proxy"},
      {"CCTL.IVALL", "cache.invalidate"},
      {"@P0 CCTL.IVALL", "cache.invalidate"},
      {"LDG.E.STRONG.SYS R3, desc[UR4][R2.64]", "ld.strong.sys"},
      {"LDG.E.128.STRONG.SYS R8, desc[UR4][R2.64]", "ld.strong.sys"},
      {"LDG.E.STRONG.GPU R3, desc[UR4][R2.64]", "ld.strong.gpu"},
      {"LDG.E.MMIO.SYS R5, desc[UR4][RZ.U32+UR4]", "ld.strong.sys"},
      {"STG.E.STRONG.SYS desc[UR4][R2.64], R5", "st.strong.sys"},
      {"STG.E.STRONG.GPU desc[UR4][R2.64], R5", "st.strong.gpu"},
      {"@P0 REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R5", "atomic.gpu"},
      {"@P0 REDG.E.ADD.STRONG.SYS desc[UR4][R2.64], R5", "atomic.sys"},
      {"ATOMG.E.CAS.STRONG.GPU PT, R5, desc[UR4][R4], R8, R9", "atomic.gpu"},
      {"ATOM.E.ADD.STRONG.GPU PT, R5, desc[UR4][R4.64], R7", "atomic.gpu"},
      {"ATOMS.POPC.INC.32 RZ, [UR4]", "atomic.shared"},
      // sm_90+ forms, as nvcc 13 compiles the probes of property_tests/audit/fixtures/
      {"UREDGR.E.ADD.NA.STRONG.GPU [UR4], UR6", "atomic.gpu"},
      {"REDGR.E.ADD.STRONG.SYS desc[UR4][R2.64], R5", "atomic.sys"},
      {"LDGMC.E.ADD.F32.RN.STRONG.SYS R5, desc[UR4][R2.64]", "multimem.ld_reduce.sys"},
      {"STAS [R2], R5", "st.async.cluster"},
      {"REDAS.ADD [R2], R5", "red.async.cluster"},
      {"SYNCS.ARRIVE.TRANS64.A1T0 R2, [UR4], RZ", "mbarrier.arrive"},
      {"SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [R2], RZ", "mbarrier.arrive.cluster"},
      {"SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3", "mbarrier.wait"},
      {"SYNCS.EXCH.64 URZ, [UR4], UR6", std::nullopt},
      {"UBLKCP.S.G [UR4], [UR6], UR8", "bulk_copy"},
      {"UBLKCP.G.S [UR4], [UR6], UR8", "bulk_copy"},
      {"UTMALDG.2D [UR8], [UR4]", "bulk_copy"},
      {"UCGABAR_ARV", "barrier.cluster"},
      {"UCGABAR_WAIT", "barrier.cluster"},
      {"DEPBAR.LE SB2, 0x0", std::nullopt},
      {"UTMACMDFLUSH", std::nullopt},
      // Not synchronisation: plain and shared accesses, barriers, arithmetic, prefetch.
      {"LDG.E R2, desc[UR4][R2.64]", std::nullopt},
      {"STG.E.128 desc[UR4][R4.64], R8", std::nullopt},
      {"LDS R5, [R4]", std::nullopt},
      {"STS [R0], R9", std::nullopt},
      {"BAR.SYNC.DEFER_BLOCKING 0x0", std::nullopt},
      {"ERRBAR", std::nullopt},
      {"CCTL.E.PF2 desc[UR4][R2.64]", std::nullopt},
      {"LDC R1, c[0x0][0x28]", std::nullopt},
      {"EXIT", std::nullopt},
  };
  for (const auto& row : rows)
    EXPECT_EQ(classify_sass_instruction(row.instruction), row.expected) << row.instruction;
}

TEST(AuditSyncClasses, PtxInstructions) {
  const Row rows[] = {
      {"griddepcontrol.wait;", "griddep.wait"},
      {"griddepcontrol.launch_dependents;", "griddep.trigger"},
      {"membar.gl;", "fence.gpu"},
      {"membar.sys;", "fence.sys"},
      {"membar.cta;", "fence.cta"},
      {"fence.acq_rel.sys;", "fence.sys"},
      {"fence.sc.gpu;", "fence.gpu"},
      {"fence.proxy.async;", "fence.proxy"},
      {"st.release.sys.global.u32 [%rd1], %r1;", "st.release.sys"},
      {"ld.acquire.sys.global.u32 %r1, [%rd1];", "ld.acquire.sys"},
      {"ld.acquire.gpu.global.u32 %r1, [%rd1];", "ld.acquire.gpu"},
      {"ld.relaxed.sys.global.u32 %r1, [%rd1];", "ld.relaxed.sys"},
      {"ld.volatile.global.v4.s32 {%r1,%r2,%r3,%r4}, [%rd1];", "ld.volatile"},
      {"st.volatile.global.u32 [%rd4], %r2;", "st.volatile"},
      {"ld.mmio.relaxed.sys.global.u32 %r1, [%rd1];", "ld.mmio.sys"},
      {"atom.global.add.u32 %r1, [%rd2], 1;", "atomic.gpu"},
      {"atom.sys.global.add.u32 %r1, [%rd2], 1;", "atomic.sys"},
      {"red.release.sys.global.add.u32 [%rd1], 1;", "atomic.release.sys"},
      {"atom.acq_rel.sys.global.cas.b32 %r1, [%rd1], 0, 1;", "atomic.acq_rel.sys"},
      {"atom.shared.add.u32 %r1, [%r2], 1;", "atomic.shared"},
      {"@%p1 atom.global.add.u32 %r1, [%rd2], 1;", "atomic.gpu"},
      {"red.async.release.global.gpu.add.u32 [%rd1], %r1;", "red.async.gpu"},
      {"red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r1], %r2, [%r3];",
       "red.async.cluster"},
      {"st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r1], %r2, [%r3];",
       "st.async.cluster"},
      {"multimem.ld_reduce.relaxed.sys.global.add.f32 %f1, [%rd1];", "multimem.ld_reduce.sys"},
      {"multimem.st.relaxed.sys.global.f32 [%rd1], %f1;", "multimem.st.sys"},
      {"multimem.red.release.sys.global.add.u32 [%rd1], %r1;", "multimem.red.sys"},
      {"mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [%r1];", "mbarrier.arrive"},
      {"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];", "mbarrier.arrive.cluster"},
      {"mbarrier.try_wait.acquire.cta.shared::cta.b64 %p1, [%r1], %rd2;", "mbarrier.wait"},
      {"mbarrier.init.shared::cta.b64 [%r1], 1;", std::nullopt},
      {"cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 128;", "bulk_copy"},
      {"cp.async.bulk.wait_group 0;", "bulk_copy"},
      {"cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd1], [%r1], 128;",
       "bulk_copy"},
      {"barrier.cluster.arrive.release;", "barrier.cluster"},
      {"barrier.cluster.wait.acquire;", "barrier.cluster"},
      // Not synchronisation.
      {"ld.global.f32 %f1, [%rd4];", std::nullopt},
      {"ld.volatile.shared.f32 %f1, [%r4];", std::nullopt},
      {"ld.param.u64 %rd1, [k_param_0];", std::nullopt},
      {"st.global.f32 [%rd4], %f2;", std::nullopt},
      {"bar.sync 0;", std::nullopt},
      {"ret;", std::nullopt},
  };
  for (const auto& row : rows)
    EXPECT_EQ(classify_ptx_instruction(row.instruction), row.expected) << row.instruction;
}

TEST(AuditSyncClasses, BodyInstructionsExcludePaddingAndExit) {
  EXPECT_FALSE(is_body_instruction_sass("NOP"));
  EXPECT_FALSE(is_body_instruction_sass("EXIT"));
  EXPECT_FALSE(is_body_instruction_sass("BRA 0x20"));
  EXPECT_FALSE(is_body_instruction_sass("@!P0 EXIT"));
  EXPECT_TRUE(is_body_instruction_sass("LDC R1, c[0x0][0x28]"));
  EXPECT_TRUE(is_body_instruction_sass("ACQBULK"));
  EXPECT_FALSE(is_body_instruction_ptx("ret;"));
  EXPECT_TRUE(is_body_instruction_ptx("griddepcontrol.wait;"));
}

}  // namespace
}  // namespace fusioncheck::audit
