#pragma once
// The fixture binaries of the live audit tests, set by CMake where nvcc built them.
// Without nvcc at build time there are no fixture binaries: their tests skip.
#ifndef FC_AUDIT_HAVE_FIXTURE_BINARIES
#define FC_AUDIT_HAVE_FIXTURE_BINARIES 0
#define FC_AUDIT_BIN_CORRECT ""
#define FC_AUDIT_BIN_WAIT_MISSING ""
#define FC_AUDIT_BIN_EMPTY_BODY ""
#define FC_AUDIT_BIN_WAIT_MISSING_SASS_ONLY ""
#define FC_AUDIT_BIN_WAIT_MISSING_PTX_ONLY ""
#define FC_AUDIT_BIN_WAIT_MISSING_OBJECT ""
#define FC_AUDIT_BIN_EMPTY_BODY_EXECUTABLE ""
#endif
