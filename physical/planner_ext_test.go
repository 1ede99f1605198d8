package physical_test

import (
	"sluice/physical"
	"sluice/physical/planner"
	"sluice/plan"
)

func init() {
	physical.PlanForTests = func(n plan.Node, targetPartitions int, shareSubplans bool) (physical.Operator, error) {
		return planner.Plan(n, planner.Config{TargetPartitions: targetPartitions, ShareSubplans: shareSubplans})
	}
}
