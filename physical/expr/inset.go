package expr

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// inSet is a constant IN list as a hash set, so that X IN (v1, ..., vk)
// costs one lookup per row instead of k comparisons (a 5,000-value list
// took a minute on lineitem). It is built once per compiled expression,
// on first use; nil where the list is not all constants of X's type.
type inSet struct {
	once    sync.Once
	ok      bool
	hasNull bool // a NULL item: no match is NULL, not false
	ints    map[int64]struct{}
	strs    map[string]struct{}
	decs    map[decimal128.Num]struct{}
}

// build fills the set from the list, if every item is a literal of X's
// type (or NULL) and the type is one the set takes.
func (s *inSet) build(x Expr, list []Expr) {
	s.once.Do(func() {
		dt := x.DataType()
		switch dt.ID() {
		case arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIMESTAMP:
			s.ints = make(map[int64]struct{}, len(list))
		case arrow.STRING:
			s.strs = make(map[string]struct{}, len(list))
		case arrow.DECIMAL128:
			s.decs = make(map[decimal128.Num]struct{}, len(list))
		default:
			return
		}
		for _, item := range list {
			l, ok := item.(*Literal)
			if !ok {
				return
			}
			if l.Value.Val == nil || l.Value.Typ.ID() == arrow.NULL {
				s.hasNull = true
				continue
			}
			if !arrow.TypeEqual(l.Value.Typ, dt) {
				return
			}
			switch v := l.Value.Val.(type) {
			case int32:
				s.ints[int64(v)] = struct{}{}
			case int64:
				s.ints[v] = struct{}{}
			case string:
				s.strs[v] = struct{}{}
			case decimal128.Num:
				s.decs[v] = struct{}{}
			default:
				return
			}
		}
		s.ok = true
	})
}

// planes evaluates X IN (set) for x's n rows: true where the value is in
// the set; false where it is not and the list has no NULL; NULL rows of x
// are neither.
func (s *inSet) planes(x operand, n int) (boolPlanes, error) {
	nb := int(bitutil.BytesForBits(int64(n)))
	p := boolPlanes{t: make([]byte, nb), f: make([]byte, nb)}
	if x.allNull() {
		return p, nil
	}
	var has func(i int) bool
	switch {
	case s.ints != nil:
		vals, stride, err := i64View(x)
		if err != nil {
			return p, err
		}
		has = func(i int) bool { _, ok := s.ints[vals[i*stride]]; return ok }
	case s.strs != nil:
		ss, err := strsOf(x)
		if err != nil {
			return p, err
		}
		has = func(i int) bool { _, ok := s.strs[string(ss.at(i))]; return ok }
	default:
		vals, stride, _, err := decView(x)
		if err != nil {
			return p, err
		}
		has = func(i int) bool { _, ok := s.decs[vals[i*stride]]; return ok }
	}
	v := validity{}
	if x.arr != nil {
		v = validityOf(x.arr)
	}
	for i := 0; i < n; i++ {
		if !v.valid(i) {
			continue
		}
		switch {
		case has(i):
			bitutil.SetBit(p.t, i)
		case !s.hasNull:
			bitutil.SetBit(p.f, i)
		}
	}
	return p, nil
}
