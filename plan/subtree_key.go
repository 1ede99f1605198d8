package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// SubtreeKeys identifies plan subtrees: two subtrees get the same key only
// when they compute the same rows in the same column positions, so the
// planners may compute one for both (a CTE or view used twice: TPC-DS q2,
// q59). Column identities are not part of a key (a view expanded twice
// gets fresh ones); a node's column references are keyed by their
// position among its children's columns, which is exact where names are
// not (sum(t1.x) and sum(t2.x) over the same join print alike). A node's
// key is its own description and its children's key numbers, kept per
// node, so keying every node of a plan takes time linear in the plan: a
// key that formatted whole subtrees made a chain of 800 UNIONs take 4 GB.
// Nodes are treated as immutable, as the optimizer's rules treat them.
type SubtreeKeys struct {
	memo map[Node]string
	ids  map[string]int
	// unique counts the subtrees that match no other: those reading a
	// recursive CTE's work table, which differs in every iteration, or
	// holding what a key cannot describe (subqueries, references to
	// columns outside the subtree).
	unique int
}

// NewSubtreeKeys returns an empty SubtreeKeys.
func NewSubtreeKeys() *SubtreeKeys {
	return &SubtreeKeys{memo: map[Node]string{}, ids: map[string]int{}}
}

// Key returns n's key.
func (k *SubtreeKeys) Key(n Node) string {
	if s, ok := k.memo[n]; ok {
		return s
	}
	s, ok := k.describe(n)
	if !ok {
		k.unique++
		s = "unique#" + strconv.Itoa(k.unique)
	}
	k.memo[n] = s
	return s
}

// describe renders n and the numbers of its children's keys; false when
// n cannot be told apart from another subtree by what it renders.
func (k *SubtreeKeys) describe(n Node) (string, bool) {
	if _, ok := n.(*WorkTable); ok {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%T %q", n, n.String())
	kids := n.Children()
	if len(kids) > 0 {
		b.WriteString(" children=")
		for _, c := range kids {
			ck := k.Key(c)
			if strings.HasPrefix(ck, "unique#") {
				return "", false
			}
			id, ok := k.ids[ck]
			if !ok {
				id = len(k.ids)
				k.ids[ck] = id
			}
			b.WriteString("#" + strconv.Itoa(id) + ",")
		}
	}
	if exprs := Exprs(n); len(exprs) > 0 {
		scope := n.Schema()
		if len(kids) > 0 {
			scope = nil
			for _, c := range kids {
				scope = append(scope, c.Schema()...)
			}
		}
		b.WriteString(" refs=")
		ok := true
		for _, e := range exprs {
			Walk(e, func(x Expr) bool {
				switch x := x.(type) {
				case *Subquery:
					ok = false
				case *ColRef:
					i := scope.IndexOf(x.ID)
					if i < 0 {
						ok = false
					}
					b.WriteString(strconv.Itoa(i) + ",")
				}
				return ok
			})
			if !ok {
				return "", false
			}
		}
	}
	if v, isValues := n.(*Values); isValues {
		b.WriteString(" rows=")
		for _, r := range v.Rows {
			b.WriteString("(" + exprList(r) + ")")
		}
	}
	switch n.(type) {
	case *Filter, *Join, *Sort, *Limit:
		// Their columns are their children's (a join's in its kind's
		// order), which the children's keys already describe.
	default:
		b.WriteString(" cols=")
		for _, c := range n.Schema() {
			b.WriteString(strconv.Quote(c.Table) + "." + strconv.Quote(c.Name) + ":")
			if c.Type != nil {
				b.WriteString(c.Type.String())
			}
			b.WriteString(",")
		}
	}
	return b.String(), true
}

// CountAggregates adds to occurs how many times each aggregate subtree of
// n occurs, by key.
func (k *SubtreeKeys) CountAggregates(n Node, occurs map[string]int) {
	if _, ok := n.(*Aggregate); ok {
		occurs[k.Key(n)]++
	}
	for _, c := range n.Children() {
		k.CountAggregates(c, occurs)
	}
}
