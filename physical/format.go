package physical

// Format renders an operator tree, one operator per line, children
// indented, with each operator's output partitioning.
func Format(op Operator) string {
	var out []byte
	shown := map[*SharedOutput]bool{}
	var rec func(op Operator, depth int)
	rec = func(op Operator, depth int) {
		for i := 0; i < depth; i++ {
			out = append(out, "  "...)
		}
		out = append(out, op.String()...)
		out = append(out, "  ["+op.OutputPartitioning().String()+"]"...)
		if s, ok := op.(*SharedOutput); ok {
			if shown[s] {
				out = append(out, " (the one above)\n"...)
				return
			}
			shown[s] = true
		}
		out = append(out, '\n')
		for _, c := range op.Children() {
			rec(c, depth+1)
		}
	}
	rec(op, 0)
	return string(out)
}
