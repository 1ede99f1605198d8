package physical

import "sluice/plan"

// PlanForTests is the physical planner (planner.Plan with these settings)
// for this package's tests that plan SQL or logical plans. Package
// physical/planner imports this package, so these tests cannot import it;
// planner_ext_test.go, an external test file (package physical_test) of
// this directory, sets the hook before any test runs.
var PlanForTests func(n plan.Node, targetPartitions int, shareSubplans bool) (Operator, error)
