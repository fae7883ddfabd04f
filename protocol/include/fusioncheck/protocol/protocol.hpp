#pragma once
// Umbrella header of the shared protocol layer.
#include "fusioncheck/protocol/mutants.hpp"
#include "fusioncheck/protocol/rotation.hpp"
#include "fusioncheck/protocol/sentinel.hpp"
#include "fusioncheck/protocol/vocabulary.hpp"
#include "fusioncheck/protocol/workspace.hpp"
