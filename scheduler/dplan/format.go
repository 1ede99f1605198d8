package dplan

import (
	"fmt"
	"strings"

	"sluice/physical"
)

// Format renders the stage DAG for EXPLAIN: per stage, producers first, a
// header line with its ID, how many partitions it runs, how its writer
// splits the output, the stages it reads and whether it is broadcast,
// shared or final, then its body indented (physical.Format).
func Format(g *Graph) string {
	var b strings.Builder
	for i, s := range g.Stages {
		b.WriteString(StageHeader(g, i))
		b.WriteByte('\n')
		for _, line := range strings.SplitAfter(physical.Format(s.Body), "\n") {
			if line != "" {
				b.WriteString("  " + line)
			}
		}
	}
	return b.String()
}

// StageHeader is the line Format starts stage g.Stages[i] with (no
// newline): its ID, partitions, output split, inputs and whether it is
// broadcast, shared or final.
func StageHeader(g *Graph, i int) string {
	s := g.Stages[i]
	ins := make([]string, len(s.Inputs))
	for j, id := range s.Inputs {
		ins[j] = fmt.Sprint(id)
	}
	h := fmt.Sprintf("Stage %d: partitions=%d output=%s inputs=[%s]", s.ID, s.Partitions(), outputString(s.Output), strings.Join(ins, ", "))
	if s.Broadcast {
		h += " broadcast"
	}
	if s.Shared {
		h += " shared"
	}
	if i == len(g.Stages)-1 {
		h += " final"
	}
	return h + filterHeader(g, s.ID)
}

// outputString names a stage's output split; pass-through is the common case
// and reads better spelled out than as Unknown(n).
func outputString(p physical.Partitioning) string {
	if p.Kind == physical.PartUnknown {
		return fmt.Sprintf("PassThrough(%d)", p.Count)
	}
	return p.String()
}
