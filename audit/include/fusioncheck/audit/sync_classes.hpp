#pragma once
// Classification of single SASS / PTX instructions into synchronisation classes.
// The SASS and PTX vocabularies differ on purpose: SASS shows what the hardware runs
// (a release store is `MEMBAR.ALL.SYS` + `STG.E.STRONG.SYS`), PTX shows what the author
// wrote (`st.release.sys`). Both share the names `griddep.wait`, `griddep.trigger` and
// `fence.<scope>`. The mapping, measured with nvcc 13 on sm_90/100/120, is in
// audit/README.md.
#include <optional>
#include <string>
#include <string_view>

namespace fusioncheck::audit {

// Text without leading and trailing whitespace (cuobjdump lines).
std::string_view trim(std::string_view text);

enum class CodeSource { kSass, kPtx };

std::string_view source_name(CodeSource source);  // "SASS" / "PTX"

inline constexpr std::string_view kGridDependencyWait = "griddep.wait";
inline constexpr std::string_view kGridDependencyTrigger = "griddep.trigger";

// `instruction` is the text of one instruction without address, encoding or trailing ';',
// e.g. "@P0 REDG.E.ADD.STRONG.SYS desc[UR4][R2.64], R5". Returns the class, or nothing for
// an instruction that does not synchronise.
std::optional<std::string> classify_sass_instruction(std::string_view instruction);

// The reduction of `red.async.release.<scope>` on a global address (sm_100: REDGR / UREDGR).
// ptxas puts a CTA-scope MEMBAR before it and the instruction carries the release at its own
// scope, where other architectures emit MEMBAR at that scope + REDG: the parser counts the
// pair as the fence of the instruction's scope (ListingParser::count_instruction).
bool is_async_release_reduction_sass(std::string_view instruction);

// `instruction` is one PTX statement, e.g. "@%p1 st.release.sys.global.u32 [%rd1], %r1;".
std::optional<std::string> classify_ptx_instruction(std::string_view instruction);

// Whether an instruction is real work, as opposed to padding and the exit sequence
// (NOP, EXIT, the trailing self-branch, ret). Used to recognise an empty kernel body.
bool is_body_instruction_sass(std::string_view instruction);
bool is_body_instruction_ptx(std::string_view instruction);

}  // namespace fusioncheck::audit
