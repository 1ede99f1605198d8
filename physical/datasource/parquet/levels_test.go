package parquet

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// TestSpreadFixed spreads dense values over random validity bitmaps (runs
// of valid and NULL rows longer and shorter than a byte, at every bit
// offset, for each width) and checks every row against a row-by-row
// reference.
func TestSpreadFixed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for iter := 0; iter < 2000; iter++ {
		width := []int{1, 4, 8, 12, 16}[rng.IntN(5)]
		rows := rng.IntN(200)
		off := rng.IntN(17)
		bits := make([]byte, (off+rows+7)/8+1)
		for i := range bits { // bits outside [off, off+rows) must not matter
			bits[i] = byte(rng.Uint32())
		}
		set := rng.IntN(2) == 0
		for i := 0; i < rows; {
			n := 1 + rng.IntN([]int{3, 12, 40}[rng.IntN(3)])
			for ; n > 0 && i < rows; n, i = n-1, i+1 {
				bitutil.SetBitTo(bits, off+i, set)
			}
			set = !set
		}
		valid := 0
		for i := 0; i < rows; i++ {
			if bitutil.BitIsSet(bits, off+i) {
				valid++
			}
		}
		dense := make([]byte, valid*width)
		for i := range dense {
			dense[i] = byte(1 + rng.IntN(255))
		}
		want := make([]byte, rows*width)
		j := 0
		for i := 0; i < rows; i++ {
			if bitutil.BitIsSet(bits, off+i) {
				copy(want[i*width:], dense[j*width:(j+1)*width])
				j++
			}
		}
		out := make([]byte, rows*width)
		for i := range out {
			out[i] = 0xee
		}
		copy(out, dense)
		spreadFixed(out, width, rows, bits, off, valid)
		if !bytes.Equal(out, want) {
			t.Fatalf("width %d rows %d off %d: got %x, want %x", width, rows, off, out, want)
		}
	}
}
