package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// similarToEscape is similar_to_escape(pattern[, escape]): the regular
// expression a SIMILAR TO pattern stands for (plan.SimilarToRegex). The
// escape defaults to a backslash; an empty one means none.
func similarToEscape(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return textRows(n, args, true, mem, func(i int, dst []byte) ([]byte, error) {
		esc := `\`
		if len(args) > 1 {
			esc = string(args[1].str(i))
		}
		re, err := plan.SimilarToRegex(string(args[0].str(i)), esc)
		if err != nil {
			return nil, NewDataError(err.Error())
		}
		return append(dst, re...), nil
	})
}

// regexpLike is regexp_like(s, pattern[, flags]), the ~ operator and, with
// a pattern from similar_to_escape, SIMILAR TO: whether the pattern
// matches somewhere in s.
func regexpLike(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	cache := regexCache{}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if !allValid(args, i) {
			b.AppendNull()
			continue
		}
		flags := ""
		if len(args) > 2 {
			flags = string(args[2].str(i))
		}
		re, global, err := cache.compile(string(args[1].str(i)), flags)
		if err != nil {
			return nil, err
		}
		if global {
			return nil, NewDataError("regexp_like() does not support the \"global\" option")
		}
		b.Append(re.Match(args[0].str(i)))
	}
	return b.NewArray(), nil
}
