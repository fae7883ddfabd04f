#include "fusioncheck/audit/sync_classes.hpp"

#include <algorithm>
#include <vector>

namespace fusioncheck::audit {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

namespace {

// Drops a guard predicate ("@P0 ", "@!PT ", "@%p1 ", "@!%p2 ").
std::string_view strip_predicate(std::string_view instruction) {
  instruction = trim(instruction);
  if (!instruction.empty() && instruction.front() == '@') {
    const auto space = instruction.find_first_of(" \t");
    if (space == std::string_view::npos) return {};
    instruction = trim(instruction.substr(space));
  }
  return instruction;
}

// The opcode with its modifiers ("LDG.E.128.STRONG.SYS", "st.release.sys.global.u32").
std::string_view opcode_of(std::string_view instruction) {
  instruction = strip_predicate(instruction);
  const auto end = instruction.find_first_of(" \t;");
  return instruction.substr(0, end);
}

std::vector<std::string_view> split_dots(std::string_view opcode) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto dot = opcode.find('.');
    parts.push_back(opcode.substr(0, dot));
    if (dot == std::string_view::npos) break;
    opcode.remove_prefix(dot + 1);
  }
  return parts;
}

bool has_part(const std::vector<std::string_view>& parts, std::string_view wanted) {
  return std::find(parts.begin() + 1, parts.end(), wanted) != parts.end();
}

// SASS scope modifiers: SM is the CTA scope.
std::optional<std::string> sass_scope(const std::vector<std::string_view>& parts) {
  if (has_part(parts, "SYS")) return "sys";
  if (has_part(parts, "GPU")) return "gpu";
  if (has_part(parts, "CTA") || has_part(parts, "SM")) return "cta";
  return std::nullopt;
}

std::optional<std::string> ptx_scope(const std::vector<std::string_view>& parts) {
  for (std::string_view scope : {"sys", "gpu", "cluster", "cta"})
    if (has_part(parts, scope)) return std::string(scope);
  return std::nullopt;
}

std::optional<std::string> ptx_semantics(const std::vector<std::string_view>& parts) {
  for (std::string_view sem : {"mmio", "acq_rel", "acquire", "release", "relaxed", "volatile"})
    if (has_part(parts, sem)) return std::string(sem);
  return std::nullopt;
}

// Accesses to these state spaces cannot synchronise with another SM or GPU.
bool is_private_space(const std::vector<std::string_view>& parts) {
  for (std::string_view space : {"shared", "shared::cta", "local", "param", "const"})
    if (has_part(parts, space)) return true;
  return false;
}

}  // namespace

std::string_view source_name(CodeSource source) {
  return source == CodeSource::kSass ? "SASS" : "PTX";
}

namespace {

// The asynchronous and cluster forms of sm_90+ (mnemonics of nvcc 13's probes, audit/README.md):
// mbarrier (SYNCS), remote shared-memory stores (STAS, REDAS), bulk and tensor copies, the
// cluster barrier, and the multimem load-reduce.
std::optional<std::string> classify_sass_async(const std::vector<std::string_view>& parts) {
  const std::string_view base = parts.front();
  if (base == "SYNCS") {
    if (parts.size() > 1 && parts[1] == "ARRIVE")
      return has_part(parts, "RED") ? "mbarrier.arrive.cluster" : "mbarrier.arrive";
    if (parts.size() > 1 && parts[1] == "PHASECHK") return "mbarrier.wait";
    return std::nullopt;  // EXCH: the barrier's initialisation
  }
  if (base == "STAS") return "st.async.cluster";
  if (base == "REDAS") return "red.async.cluster";
  if (base == "UBLKCP" || base == "UBLKRED" || base == "UTMALDG" || base == "UTMASTG" ||
      base == "UTMAREDG")
    return "bulk_copy";
  if (base == "UCGABAR_ARV" || base == "UCGABAR_WAIT") return "barrier.cluster";
  if (base == "LDGMC") return "multimem.ld_reduce." + sass_scope(parts).value_or("sys");
  return std::nullopt;
}

}  // namespace

bool is_async_release_reduction_sass(std::string_view instruction) {
  const auto base = split_dots(opcode_of(instruction)).front();
  return base == "REDGR" || base == "UREDGR";
}

std::optional<std::string> classify_sass_instruction(std::string_view instruction) {
  const auto parts = split_dots(opcode_of(instruction));
  const std::string_view base = parts.front();
  if (auto async = classify_sass_async(parts)) return async;
  if (base == "ACQBULK") return std::string(kGridDependencyWait);
  if (base == "PREEXIT") return std::string(kGridDependencyTrigger);
  if (base == "MEMBAR") return "fence." + sass_scope(parts).value_or("other");
  if (base == "FENCE") return "fence.proxy";
  if (base == "CCTL") {
    if (has_part(parts, "IVALL")) return "cache.invalidate";
    return std::nullopt;
  }
  if (base == "ATOMS") return "atomic.shared";
  if (base == "ATOM" || base == "ATOMG" || base == "RED" || base == "REDG" ||
      is_async_release_reduction_sass(base))
    return "atomic." + sass_scope(parts).value_or("gpu");
  const bool is_load = base == "LD" || base == "LDG";
  const bool is_store = base == "ST" || base == "STG";
  if (is_load || is_store) {
    const bool strong = has_part(parts, "STRONG") || has_part(parts, "MMIO");
    const auto scope = sass_scope(parts);
    if (!strong || !scope) return std::nullopt;
    return std::string(is_load ? "ld" : "st") + ".strong." + *scope;
  }
  return std::nullopt;
}

namespace {

// PTX's asynchronous and cluster forms (PTX ISA 8.x/9.0, sm_90+): mbarrier, st.async and
// red.async, bulk copies, the cluster barrier, multimem.
std::optional<std::string> classify_ptx_async(const std::vector<std::string_view>& parts) {
  const std::string_view base = parts.front();
  const std::string_view second = parts.size() > 1 ? parts[1] : std::string_view();
  if (base == "mbarrier") {
    if (second.starts_with("arrive"))
      return has_part(parts, "shared::cluster") ? "mbarrier.arrive.cluster" : "mbarrier.arrive";
    if (second == "try_wait" || second == "test_wait") return "mbarrier.wait";
    return std::nullopt;
  }
  if ((base == "st" || base == "red") && second == "async") {
    const std::string op(base);
    if (has_part(parts, "global")) return op + ".async." + ptx_scope(parts).value_or("gpu");
    return op + ".async.cluster";
  }
  if ((base == "cp" && second == "async" && has_part(parts, "bulk")) ||
      (base == "cp" && second == "reduce" && has_part(parts, "bulk")))
    return "bulk_copy";
  if (base == "barrier" && second == "cluster") return "barrier.cluster";
  if (base == "multimem" && !second.empty()) {
    const auto scope = ptx_scope(parts);
    return "multimem." + std::string(second) + (scope ? "." + *scope : std::string());
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> classify_ptx_instruction(std::string_view instruction) {
  const auto parts = split_dots(opcode_of(instruction));
  const std::string_view base = parts.front();
  if (auto async = classify_ptx_async(parts)) return async;
  if (base == "griddepcontrol") {
    if (has_part(parts, "wait")) return std::string(kGridDependencyWait);
    if (has_part(parts, "launch_dependents")) return std::string(kGridDependencyTrigger);
    return std::nullopt;
  }
  if (base == "membar") {
    if (has_part(parts, "gl")) return "fence.gpu";
    if (has_part(parts, "sys")) return "fence.sys";
    if (has_part(parts, "cta")) return "fence.cta";
    return "fence.other";
  }
  if (base == "fence") {
    if (parts.size() > 1 && parts[1].starts_with("proxy")) return "fence.proxy";
    return "fence." + ptx_scope(parts).value_or("other");
  }
  if (base == "atom" || base == "red") {
    if (has_part(parts, "shared") || has_part(parts, "shared::cta") ||
        has_part(parts, "shared::cluster"))
      return "atomic.shared";
    const auto sem = ptx_semantics(parts);
    const std::string scope = ptx_scope(parts).value_or("gpu");  // PTX default scope: gpu
    if (sem && *sem != "relaxed") return "atomic." + *sem + "." + scope;
    return "atomic." + scope;
  }
  if (base == "ld" || base == "st") {
    if (is_private_space(parts)) return std::nullopt;
    const auto sem = ptx_semantics(parts);
    if (!sem) return std::nullopt;
    const std::string op(base);
    if (*sem == "volatile") return op + ".volatile";
    if (*sem == "mmio") return op + ".mmio.sys";
    const auto scope = ptx_scope(parts);
    if (!scope) return std::nullopt;  // weak access: no ordering
    return op + "." + *sem + "." + *scope;
  }
  return std::nullopt;
}

bool is_body_instruction_sass(std::string_view instruction) {
  const auto base = split_dots(opcode_of(instruction)).front();
  return !(base.empty() || base == "NOP" || base == "EXIT" || base == "BRA" || base == "RET");
}

bool is_body_instruction_ptx(std::string_view instruction) {
  const auto base = split_dots(opcode_of(instruction)).front();
  return !(base.empty() || base == "ret" || base == "exit");
}

}  // namespace fusioncheck::audit
