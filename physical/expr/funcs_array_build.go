package expr

import (
	"bytes"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Functions that build arrays: make_array (ARRAY[a, b, ...]) and
// string_to_array.

func init() {
	funcArity["make_array"] = [2]int{0, 1 << 16}
	funcArity["string_to_array"] = [2]int{2, 3}
	opFuncs["make_array"] = makeArrayFunc
	rowFuncs["string_to_array"] = stringToArray
	nonStrict["make_array"] = true
	nonStrict["string_to_array"] = true
}

// makeArrayFunc is make_array(a, b, ...), the ARRAY[a, b, ...] constructor:
// per row, an array of the arguments' values (NULLs included), all of the
// array's element type (the binder casts them).
func makeArrayFunc(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	args, err := materializeAll(ops, n, mem)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(args)
	elem := e.Type.(*arrow.ListType).Elem()
	b := array.NewListBuilder(mem, elem)
	defer b.Release()
	b.Reserve(n)
	vb := b.ValueBuilder()
	vb.Reserve(n * len(args))
	for i := 0; i < n; i++ {
		b.Append(true)
		for _, a := range args {
			if a.DataType().ID() == arrow.NULL {
				vb.AppendNull()
				continue
			}
			if err := AppendValue(vb, a, i); err != nil {
				return nil, err
			}
		}
	}
	return b.NewArray(), nil
}

// stringToArray is string_to_array(s, sep[, null_string]), PostgreSQL's:
// s split at every sep; a NULL sep splits s into its characters, an empty
// one gives s whole; an empty s gives an empty array; elements equal to
// null_string are NULL. A NULL s gives NULL.
func stringToArray(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	b := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	defer b.Release()
	vb := b.ValueBuilder().(*array.StringBuilder)
	for i := 0; i < n; i++ {
		if !args[0].valid(i) {
			b.AppendNull()
			continue
		}
		s := args[0].str(i)
		var nullStr []byte
		hasNull := len(args) > 2 && args[2].valid(i)
		if hasNull {
			nullStr = args[2].str(i)
		}
		add := func(el []byte) {
			if hasNull && bytes.Equal(el, nullStr) {
				vb.AppendNull()
			} else {
				vb.BinaryBuilder.Append(el)
			}
		}
		b.Append(true)
		switch {
		case len(s) == 0:
		case !args[1].valid(i):
			for len(s) > 0 {
				_, w := utf8.DecodeRune(s)
				add(s[:w])
				s = s[w:]
			}
		case len(args[1].str(i)) == 0:
			add(s)
		default:
			sep := args[1].str(i)
			for {
				j := bytes.Index(s, sep)
				if j < 0 {
					add(s)
					break
				}
				add(s[:j])
				s = s[j+len(sep):]
			}
		}
	}
	return b.NewArray(), nil
}

func init() {
	funcArity["array_cat"] = [2]int{2, 2}
	funcArity["array_append"] = [2]int{2, 2}
	funcArity["array_prepend"] = [2]int{2, 2}
	for _, name := range []string{"array_cat", "array_append", "array_prepend"} {
		opFuncs[name] = arrayConcat
		nonStrict[name] = true
	}
}

// arrayConcat is array_cat(a, b) (a || b), array_append(a, e) (a || e)
// and array_prepend(e, a) (e || a), as PostgreSQL: a NULL array counts as
// empty unless both arrays are NULL (array_cat), a NULL element is
// appended as a NULL element.
func arrayConcat(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	args, err := materializeAll(ops, n, mem)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(args)
	elem := e.Type.(*arrow.ListType).Elem()
	b := array.NewListBuilder(mem, elem)
	defer b.Release()
	b.Reserve(n)
	vb := b.ValueBuilder()
	// part appends argument k of row i: a whole array, or one element.
	part := func(k, i int) error {
		a := args[k]
		l, isList := a.(*array.List)
		if !isList {
			if a.DataType().ID() == arrow.NULL {
				vb.AppendNull()
				return nil
			}
			return AppendValue(vb, a, i)
		}
		if l.IsNull(i) {
			return nil
		}
		lo, hi := l.ValueOffsets(i)
		for j := int(lo); j < int(hi); j++ {
			if err := AppendValue(vb, l.ListValues(), j); err != nil {
				return err
			}
		}
		return nil
	}
	isNullList := func(k, i int) bool {
		return args[k].DataType().ID() == arrow.NULL || args[k].IsNull(i)
	}
	for i := 0; i < n; i++ {
		if e.Name == "array_cat" && isNullList(0, i) && isNullList(1, i) {
			b.AppendNull()
			continue
		}
		b.Append(true)
		for k := range args {
			if err := part(k, i); err != nil {
				return nil, err
			}
		}
	}
	return b.NewArray(), nil
}

// materializeAll materializes every operand to n rows; on an error it
// releases those it made.
func materializeAll(ops []operand, n int, mem memory.Allocator) ([]arrow.Array, error) {
	args := make([]arrow.Array, len(ops))
	for k, o := range ops {
		a, err := o.materialize(n, mem)
		if err != nil {
			releaseArrays(args)
			return nil, err
		}
		args[k] = a
	}
	return args, nil
}

// maxSeriesValues bounds the values series_array makes for one batch
// (a variable so that tests can lower it).
var maxSeriesValues = 1 << 26

// seriesArray is series_array(start, stop[, step]), what
// generate_series(start, stop[, step]) in a select list unnests: per row,
// the BIGINT list start, start+step, ... up to stop (down to it for a
// negative step); empty when the step points away from stop; NULL when an
// argument is NULL. A zero step is an error, as in PostgreSQL.
func seriesArray(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	var views [3][]int64
	var strides [3]int
	var valid [3]validity
	for k := range ops {
		v, s, err := i64View(ops[k])
		if err != nil {
			return nil, err
		}
		views[k], strides[k] = v, s
		if ops[k].arr != nil {
			valid[k] = validityOf(ops[k].arr)
		}
	}
	b := array.NewListBuilder(mem, e.Type.(*arrow.ListType).Elem())
	defer b.Release()
	vb := b.ValueBuilder().(*array.Int64Builder)
	total := 0
	for i := 0; i < n; i++ {
		null := false
		for k := range ops {
			null = null || !valid[k].valid(i)
		}
		if null {
			b.AppendNull()
			continue
		}
		start, stop, step := views[0][i*strides[0]], views[1][i*strides[1]], int64(1)
		if len(ops) > 2 {
			step = views[2][i*strides[2]]
		}
		if step == 0 {
			return nil, NewDataError("step size cannot equal zero")
		}
		b.Append(true)
		if step > 0 && start > stop || step < 0 && start < stop {
			continue
		}
		count := (stop-start)/step + 1 // both differences have step's sign
		if count <= 0 || total+int(count) > maxSeriesValues || count > int64(maxSeriesValues) {
			return nil, dataErrorf("generate_series in a select list made more than %d values for one batch: use it in FROM", maxSeriesValues)
		}
		total += int(count)
		vb.Reserve(int(count))
		for v, c := start, int64(0); c < count; v, c = v+step, c+1 {
			vb.UnsafeAppend(v)
		}
	}
	return b.NewArray(), nil
}

// seriesTimestampArray is series_ts_array(start, stop, step), what
// generate_series(start, stop, step interval) of timestamps in a select
// list unnests: per row, start, start+step, start+step+step, ... (each
// value the last plus step, as PostgreSQL adds) while not past stop; NULL
// when an argument is NULL. A zero step is an error, and so is a step
// that does not move a value towards stop ('1 mon -30 days' from some
// dates).
func seriesTimestampArray(e *Func, ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	starts, ss, err := i64View(ops[0])
	if err != nil {
		return nil, err
	}
	stops, st, err := i64View(ops[1])
	if err != nil {
		return nil, err
	}
	steps, sp := intervalView(ops[2])
	var valid [3]validity
	for k := range ops {
		if ops[k].arr != nil {
			valid[k] = validityOf(ops[k].arr)
		}
	}
	b := array.NewListBuilder(mem, e.Type.(*arrow.ListType).Elem())
	defer b.Release()
	vb := b.ValueBuilder().(*array.TimestampBuilder)
	total := 0
	for i := 0; i < n; i++ {
		if !valid[0].valid(i) || !valid[1].valid(i) || !valid[2].valid(i) {
			b.AppendNull()
			continue
		}
		cur, stop, step := starts[i*ss], stops[i*st], steps[i*sp]
		dir := CompareIntervals(step, arrow.MonthDayNanoInterval{})
		if dir == 0 {
			return nil, NewDataError("step size cannot equal zero")
		}
		b.Append(true)
		for dir > 0 && cur <= stop || dir < 0 && cur >= stop {
			if total++; total > maxSeriesValues {
				return nil, dataErrorf("generate_series in a select list made more than %d values for one batch: use it in FROM", maxSeriesValues)
			}
			vb.Append(arrow.Timestamp(cur))
			next, ok := shiftTimestamp(cur, step, 1)
			if !ok {
				break // past the largest timestamp: past stop too
			}
			if dir > 0 && next <= cur || dir < 0 && next >= cur {
				return nil, dataErrorf("generate_series: step %s does not move from %s", plan.AppendIntervalText(nil, step),
					arrow.Timestamp(cur).ToTime(arrow.Microsecond).Format("2006-01-02 15:04:05"))
			}
			cur = next
		}
	}
	return b.NewArray(), nil
}

func init() {
	funcArity["series_array"] = [2]int{2, 3}
	opFuncs["series_array"] = seriesArray
	funcArity["series_ts_array"] = [2]int{3, 3}
	opFuncs["series_ts_array"] = seriesTimestampArray
}
