// The two faces of a doctor Report (docs/doctor.md, "Output"): a table for
// people, grouped by layer in the runbook's order (switch hints, host NIC,
// MemKV), and one JSON object for tools. Pure functions.
#ifndef MEMKV_DOCTOR_RENDER_H_
#define MEMKV_DOCTOR_RENDER_H_

#include <string>
#include <string_view>

#include "doctor/finding.h"

namespace memkv::doctor {

// The human table, ending with one summary line ("2 errors, 1 warning").
std::string RenderTable(const Report& report);

// {"host":..,"device":..,"port":..,"netdev":..,"config":..,"interval_ms":..,
//  "findings":[{"id","layer","severity","check","observed","expected",
//  "message","fix":[..]}],"summary":{"errors","warnings","info","ok",
//  "exit_code"}} followed by a newline. device, port and netdev are null when
// no device was examined.
std::string RenderJson(const Report& report);

}  // namespace memkv::doctor

#endif  // MEMKV_DOCTOR_RENDER_H_
