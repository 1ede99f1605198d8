package expr

import (
	"fmt"
	"regexp"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/plan"
)

// Arrays (VARCHAR[], plan.TextArray) are Arrow lists of utf8. They come
// from regexp_match and are read with a[i], cardinality, array_length,
// array_to_string and a cast to text.

// regexpRows builds a VARCHAR[] per row of (s, pattern[, flags]): NULL
// where an argument is NULL, else what row adds to lb for s and its
// compiled pattern. name's g flag is refused.
func regexpRows(name string, args []rowArg, n int, mem memory.Allocator,
	row func(lb *array.ListBuilder, vb *array.StringBuilder, re *regexp.Regexp, s []byte)) (arrow.Array, error) {
	lb := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.StringBuilder)
	cache := regexCache{}
	for i := range n {
		if !allValid(args, i) {
			lb.AppendNull()
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
			return nil, NewDataError(name + `() does not support the "global" option`)
		}
		row(lb, vb, re, args[0].str(i))
	}
	return lb.NewArray(), nil
}

// regexpMatch is regexp_match(s, pattern[, flags]): the first match's
// capture groups (a group that took no part in the match is a NULL
// element), or the whole match when the pattern has no groups; NULL when
// nothing matches.
func regexpMatch(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return regexpRows("regexp_match", args, n, mem, func(lb *array.ListBuilder, vb *array.StringBuilder, re *regexp.Regexp, s []byte) {
		m := re.FindSubmatchIndex(s)
		if m == nil {
			lb.AppendNull()
			return
		}
		lb.Append(true)
		if len(m) == 2 {
			vb.BinaryBuilder.Append(s[m[0]:m[1]])
			return
		}
		for g := 2; g < len(m); g += 2 {
			if m[g] < 0 {
				vb.AppendNull()
			} else {
				vb.BinaryBuilder.Append(s[m[g]:m[g+1]])
			}
		}
	})
}

// regexpSplit is regexp_split_to_array(s, pattern[, flags]), PostgreSQL's:
// the pieces of s between the pattern's matches; an empty match at the
// start or the end of s, or right after another match, splits nothing.
func regexpSplit(args []rowArg, n int, mem memory.Allocator) (arrow.Array, error) {
	return regexpRows("regexp_split_to_array", args, n, mem, func(lb *array.ListBuilder, vb *array.StringBuilder, re *regexp.Regexp, s []byte) {
		lb.Append(true)
		last := 0
		// FindAll already skips an empty match right after a match.
		for _, m := range re.FindAllIndex(s, -1) {
			if m[0] == m[1] && (m[0] == 0 || m[0] == len(s)) {
				continue
			}
			vb.BinaryBuilder.Append(s[last:m[0]])
			last = m[1]
		}
		vb.BinaryBuilder.Append(s[last:])
	})
}

// listOperand materializes an array operand.
func listOperand(o operand, n int, mem memory.Allocator) (*array.List, error) {
	a, err := o.materialize(n, mem)
	if err != nil {
		return nil, err
	}
	l, ok := a.(*array.List)
	if !ok {
		a.Release()
		return nil, fmt.Errorf("internal: expected an array, got %s", a.DataType())
	}
	return l, nil
}

// evalArrayFunc computes the functions whose first argument is an array.
func (e *Func) evalArrayFunc(ops []operand, n int, mem memory.Allocator) (arrow.Array, error) {
	l, err := listOperand(ops[0], n, mem)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	rest, err := rowArgsOf(ops[1:], n)
	if err != nil {
		return nil, err
	}
	valid := func(i int) bool { return l.IsValid(i) && allValid(rest, i) }
	switch e.Name {
	case "array_element":
		elems := l.ListValues()
		b := array.NewBuilder(mem, elems.DataType())
		defer b.Release()
		b.Reserve(n)
		for i := range n {
			if !valid(i) {
				b.AppendNull()
				continue
			}
			lo, hi := l.ValueOffsets(i)
			k := rest[0].int(i)
			if k < 1 || k > hi-lo {
				b.AppendNull()
				continue
			}
			if err := AppendValue(b, elems, int(lo+k-1)); err != nil {
				return nil, err
			}
		}
		return b.NewArray(), nil
	case "cardinality", "array_length":
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.Reserve(n)
		for i := range n {
			lo, hi := l.ValueOffsets(i)
			// array_length of an empty array, or of a dimension it
			// does not have, is NULL.
			if !valid(i) || e.Name == "array_length" && (hi == lo || rest[0].int(i) != 1) {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			b.UnsafeAppend(int32(hi - lo))
		}
		return b.NewArray(), nil
	case "array_to_string":
		// NULL elements are left out, or written as the third argument
		// when it is given and not NULL. Elements of other types are
		// written as their cast to text.
		ea, err := castToText(l.ListValues(), mem)
		if err != nil {
			return nil, err
		}
		defer ea.Release()
		elems := ea.(*array.String)
		b := newStringBuilder(mem, n, 0)
		var tmp []byte
		for i := range n {
			if !l.IsValid(i) || !rest[0].valid(i) {
				b.b.AppendNull()
				continue
			}
			lo, hi := l.ValueOffsets(i)
			sep := rest[0].str(i)
			tmp = tmp[:0]
			first := true
			for k := int(lo); k < int(hi); k++ {
				var v string
				switch {
				case elems.IsValid(k):
					v = elems.Value(k)
				case len(rest) > 1 && rest[1].valid(i):
					v = string(rest[1].str(i))
				default:
					continue
				}
				if !first {
					tmp = append(tmp, sep...)
				}
				first = false
				tmp = append(tmp, v...)
			}
			b.b.BinaryBuilder.Append(tmp)
		}
		return b.finish(), nil
	}
	return nil, fmt.Errorf("unknown function %s", e.Name)
}

// castToText is a's values as text, for the elements of an array: a
// retained a when it is text already, every value NULL for a NULL array.
func castToText(a arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	switch a.DataType().ID() {
	case arrow.STRING:
		a.Retain()
		return a, nil
	case arrow.NULL:
		return nullArray(plan.Utf8, a.Len(), mem), nil
	case arrow.LIST:
		return castListToString(a, mem)
	}
	return castToString(a, mem)
}

// castListToString is an array's text form, {a,b,NULL}.
func castListToString(a arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	l, ok := a.(*array.List)
	if !ok {
		return nil, fmt.Errorf("cannot cast %s to VARCHAR", plan.TypeName(a.DataType()))
	}
	ea, err := castToText(l.ListValues(), mem)
	if err != nil {
		return nil, err
	}
	defer ea.Release()
	elems := ea.(*array.String)
	b := newStringBuilder(mem, l.Len(), 0)
	var tmp []byte
	for i := range l.Len() {
		if l.IsNull(i) {
			b.b.AppendNull()
			continue
		}
		lo, hi := l.ValueOffsets(i)
		tmp = plan.AppendArrayText(tmp[:0], int(hi-lo), func(k int) (string, bool) {
			j := int(lo) + k
			return elems.Value(j), elems.IsValid(j)
		})
		b.b.BinaryBuilder.Append(tmp)
	}
	return b.finish(), nil
}

// AppendListRow appends row j of l to b, whose value builder is of the
// array's element type. Operators that gather rows value by value use it
// for arrays.
func AppendListRow(b *array.ListBuilder, l *array.List, j int) error {
	if l.IsNull(j) {
		b.AppendNull()
		return nil
	}
	lo, hi := l.ValueOffsets(j)
	b.Append(true)
	vb, el := b.ValueBuilder(), l.ListValues()
	for k := int(lo); k < int(hi); k++ {
		if err := AppendValue(vb, el, k); err != nil {
			return err
		}
	}
	return nil
}

// AppendValue appends value k of a (NULL when it is NULL) to b, a builder
// of a's type: one of sluice's element types.
func AppendValue(b array.Builder, a arrow.Array, k int) error {
	if a.IsNull(k) {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(a.(*array.String).Value(k))
	case *array.Int32Builder:
		b.Append(a.(*array.Int32).Value(k))
	case *array.Int64Builder:
		b.Append(a.(*array.Int64).Value(k))
	case *array.Float64Builder:
		b.Append(a.(*array.Float64).Value(k))
	case *array.BooleanBuilder:
		b.Append(a.(*array.Boolean).Value(k))
	case *array.Decimal128Builder:
		b.Append(a.(*array.Decimal128).Value(k))
	case *array.Date32Builder:
		b.Append(a.(*array.Date32).Value(k))
	case *array.TimestampBuilder:
		b.Append(a.(*array.Timestamp).Value(k))
	case *array.MonthDayNanoIntervalBuilder:
		b.Append(a.(*array.MonthDayNanoInterval).Value(k))
	case *array.ListBuilder:
		return AppendListRow(b, a.(*array.List), k)
	default:
		return fmt.Errorf("arrays of %s are not supported", a.DataType())
	}
	return nil
}

// TakeList gathers rows idx of an array (a negative index gives
// NULL). Arrow's own take kernel is not used for lists: it fails on some
// inputs, and in a goroutine of its own where a panic cannot be caught.
func TakeList(mem memory.Allocator, l *array.List, idx []int32) (arrow.Array, error) {
	b := array.NewListBuilder(mem, l.DataType().(*arrow.ListType).Elem())
	defer b.Release()
	b.Reserve(len(idx))
	for _, j := range idx {
		if j < 0 {
			b.AppendNull()
		} else if err := AppendListRow(b, l, int(j)); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}
