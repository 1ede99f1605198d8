package parquet

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// flbaReference is a FIXED_LEN_BYTE_ARRAY decimal's value, the slow and
// obvious way: a big-endian two's complement integer of len(v) bytes.
func flbaReference(v []byte) decimal128.Num {
	x := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return decimal128.FromBigInt(x)
}

// TestFlbaToDecimal128 checks the conversion of every width against the
// reference, on random values with the sign bit set and clear, for counts
// that put values at the start and end of the page (where the fast loads
// give way to copies) and in between.
func TestFlbaToDecimal128(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for w := 1; w <= 16; w++ {
		for _, n := range []int{0, 1, 2, 3, 5, 8, 17, 64} {
			src := make([]byte, n*w)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			if n > 0 {
				src[0] |= 0x80        // a negative first value
				src[(n-1)*w] &^= 0x80 // a positive last one
			}
			dst := make([]byte, n*16)
			flbaToDecimal128(dst, src, n, w)
			got := unsafe.Slice((*decimal128.Num)(unsafe.Pointer(unsafe.SliceData(dst))), n)
			for i := range n {
				if want := flbaReference(src[i*w : (i+1)*w]); got[i] != want {
					t.Fatalf("width %d, %d values: value %d (% x) = %s, want %s", w, n, i, src[i*w:(i+1)*w], got[i].BigInt(), want.BigInt())
				}
			}
		}
	}
}

func BenchmarkFlbaToDecimal128(b *testing.B) {
	for _, w := range []int{7, 16} {
		b.Run(map[int]string{7: "w7", 16: "w16"}[w], func(b *testing.B) {
			const n = 8192
			src := make([]byte, n*w)
			for i := range src {
				src[i] = byte(i * 31)
			}
			dst := make([]byte, n*16)
			b.SetBytes(n * 16)
			for b.Loop() {
				flbaToDecimal128(dst, src, n, w)
			}
		})
	}
}
