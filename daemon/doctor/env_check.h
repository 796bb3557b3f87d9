// The runtime environment variables that change how copies and kernels are scheduled
// (field note 4.3 and 5.3), each shown with what its current value does.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "doctor_report.h"

namespace conveyor::doctor {

// The variables the doctor reports, in print order.
const std::vector<std::string>& DoctorEnvVars();

// What `name` set to `value` (nullopt: unset) changes. kWarn for values that serialise
// copies and kernels or hide every device; kOk otherwise. The detail starts with the
// value ("unset" when unset).
CheckResult DescribeEnv(const std::string& name, const std::optional<std::string>& value);

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// DescribeEnv for every variable in DoctorEnvVars(); `lookup` is getenv in the doctor.
std::vector<CheckResult> DescribeEnvironment(const EnvLookup& lookup);

// getenv as an EnvLookup.
std::optional<std::string> GetEnv(const std::string& name);

}  // namespace conveyor::doctor
