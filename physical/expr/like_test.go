package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestLikeByLiteral checks patterns that start with '%' and contain a
// literal (matched by one search over all rows' bytes) against matching
// each row on its own: rows over a small alphabet, so that the literal
// occurs often, across row boundaries too, with empty rows, multi-byte
// characters and a sliced array.
func TestLikeByLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "b", "c", "é", "ab"}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for range 3000 {
		var s string
		for range rng.IntN(9) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		b.Append(s)
	}
	full := b.NewStringArray()
	b.Release()
	defer full.Release()
	sliced := array.NewSlice(full, 7, 2990).(*array.String)
	defer sliced.Release()
	patterns := []string{"%ab%", "%aba%", "%bb%", "%ab%ba%", "%a_b%c%", "%é%", "%éa%b", "%cc%a%", "%abcabcab%"}
	for _, arr := range []*array.String{full, sliced} {
		xs := strs{offs: arr.ValueOffsets(), data: fullStringData(arr), stride: 1}
		n := arr.Len()
		for _, pat := range patterns {
			m, err := compileLike([]byte(pat))
			if err != nil {
				t.Fatal(err)
			}
			if m.requiredLiteral() == nil {
				t.Fatalf("%s: no required literal", pat)
			}
			for _, want := range []byte{1, 0} {
				out := make([]byte, bitutil.BytesForBits(int64(n)))
				m.matchAll(xs, n, want, out)
				for i := range n {
					got := bitutil.BitIsSet(out, i)
					ref := m.match([]byte(arr.Value(i))) == (want == 1)
					if got != ref {
						t.Fatalf("%s want=%d row %d %q: %v, want %v", pat, want, i, arr.Value(i), got, ref)
					}
				}
			}
		}
	}
	if got := fmt.Sprint(newLiteralFinder([]byte("xay"), []byte("yyyyaaaax")).rare); got != "0" {
		t.Fatalf("rarest byte of xay in the sample at %s, want 0", got)
	}
}
