package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// Most writers (DuckDB, Spark, pandas) mark every column OPTIONAL, NULLs
// or not, so each data page opens with the column's definition levels.
// For a flat optional column (maximum definition level 1) a level is one
// bit: 1 for a value, 0 for a NULL, in the RLE/bit-packed hybrid. The scan's
// own readers decode those levels straight into the batch's validity bitmap
// (a bit-packed run of width 1 is the bitmap already; a repeated run sets a
// range), decode the page's values densely and spread them over the valid
// rows. A page whose levels say no NULL costs one run header, so a chunk
// whose statistics count no NULL needs no path of its own.

var errLevelsCorrupt = errors.New("corrupt definition levels")

// flatPage is a data page of a flat column taken apart: its values and,
// for an optional column, a decoder over its definition levels.
type flatPage struct {
	values []byte
	rows   int // levels (rows) of the page
	levels *levelDecoder
}

// splitDataPage separates the definition levels of a data page of a flat
// column whose maximum definition level is maxDef (0 or 1) from its values.
// lv is the decoder to reuse for the levels.
func splitDataPage(p file.Page, maxDef int16, lv *levelDecoder) (flatPage, error) {
	switch p := p.(type) {
	case *file.DataPageV1:
		data, rows := p.Data(), int(p.NumValues())
		if maxDef == 0 {
			return flatPage{values: data, rows: rows}, nil
		}
		if parquet.Encoding(p.DefinitionLevelEncoding()) != parquet.Encodings.RLE {
			return flatPage{}, fmt.Errorf("definition levels encoded %s, want RLE", parquet.Encoding(p.DefinitionLevelEncoding()))
		}
		if len(data) < 4 {
			return flatPage{}, fmt.Errorf("%w: no length", errLevelsCorrupt)
		}
		n := binary.LittleEndian.Uint32(data)
		if uint64(n) > uint64(len(data)-4) {
			return flatPage{}, fmt.Errorf("%w: %d bytes of levels in a page of %d", errLevelsCorrupt, n, len(data))
		}
		lv.reset(data[4:4+n], rows)
		return flatPage{values: data[4+n:], rows: rows, levels: lv}, nil
	case *file.DataPageV2:
		data, rows := p.Data(), int(p.NumValues())
		rl, dl := int(p.RepetitionLevelByteLen()), int(p.DefinitionLevelByteLen())
		if rl < 0 || dl < 0 || rl+dl > len(data) {
			return flatPage{}, fmt.Errorf("%w: %d bytes of levels in a page of %d", errLevelsCorrupt, rl+dl, len(data))
		}
		fp := flatPage{values: data[rl+dl:], rows: rows}
		if maxDef == 0 || (dl == 0 && p.NumNulls() == 0) {
			// A v2 page counts its NULLs in its header: a writer that
			// left out the levels of a page without any is taken at its
			// word. Levels that are there are read (a page without NULLs
			// costs one run header), not trusted to match the count.
			return fp, nil
		}
		lv.reset(data[rl:rl+dl], rows)
		fp.levels = lv
		return fp, nil
	}
	return flatPage{}, fmt.Errorf("unexpected %T where a data page was due", p)
}

// levelDecoder decodes the one-bit definition levels of a page in pieces
// of any size into validity bits.
type levelDecoder struct {
	data   []byte // from the next run header
	left   int    // levels of the page not yet handed out
	run    int    // levels of the current run not yet handed out
	packed bool
	value  bool   // a repeated run's level
	bits   []byte // a bit-packed run's bits (and the rest of the page)
	at     int    // a bit-packed run's next bit
}

// reset starts a page of count levels.
func (d *levelDecoder) reset(data []byte, count int) {
	*d = levelDecoder{data: data, left: count}
}

// take writes the next k levels (k <= left) as validity bits into valid
// from bit off and returns how many were 1 (rows with a value).
func (d *levelDecoder) take(k int, valid []byte, off int) (int, error) {
	if k > d.left {
		return 0, fmt.Errorf("%w: %d levels wanted, %d left", errLevelsCorrupt, k, d.left)
	}
	set := 0
	for k > 0 {
		if d.run == 0 {
			if err := d.nextRun(); err != nil {
				return 0, err
			}
			continue
		}
		m := min(d.run, k)
		if d.packed {
			bitutil.CopyBitmap(d.bits, d.at, m, valid, off)
			set += bitutil.CountSetBits(valid, off, m)
			d.at += m
		} else {
			bitutil.SetBitsTo(valid, int64(off), int64(m), d.value)
			if d.value {
				set += m
			}
		}
		d.run -= m
		d.left -= m
		off += m
		k -= m
	}
	return set, nil
}

// nextRun reads the next run header (see codeDecoder.nextRun; the width
// is 1 bit, so a repeated run's value is one byte).
func (d *levelDecoder) nextRun() error {
	h, k := binary.Uvarint(d.data)
	if k <= 0 {
		return d.fail()
	}
	d.data = d.data[k:]
	n := min(h>>1, uint64(d.left))
	if h&1 == 0 {
		if len(d.data) < 1 || d.data[0] > 1 || n == 0 {
			return d.fail()
		}
		d.packed, d.value, d.run = false, d.data[0] == 1, int(n)
		d.data = d.data[1:]
		return nil
	}
	if h>>1 > uint64(len(d.data)) {
		return d.fail()
	}
	groups := int(h >> 1)
	d.packed, d.bits, d.at, d.run = true, d.data[:groups], 0, int(min(uint64(groups)*8, uint64(d.left)))
	if d.run == 0 {
		return d.fail()
	}
	d.data = d.data[groups:]
	return nil
}

func (d *levelDecoder) fail() error {
	d.left, d.run = 0, 0
	return errLevelsCorrupt
}

// spreadFixed moves the first `valid` values of width bytes each in
// out (the page's values, decoded densely) to the rows of out whose bit in
// bits (from bit off, rows rows) is set, zeroing the NULL rows. It walks
// backwards, so no value is overwritten before it moves.
func spreadFixed(out []byte, width, rows int, bits []byte, off, valid int) {
	// Rows [i, rows) are placed and values [0, j) still wait; once the
	// two meet, every row below is valid and its value already in place.
	// Each step moves a whole run of valid rows with one copy, or zeroes a
	// whole run of NULL ones.
	j := valid
	for i := rows; i > j; {
		set := bitutil.BitIsSet(bits, off+i-1)
		k := runStart(bits, off, i, j, set)
		if set {
			n := i - k
			copy(out[k*width:i*width], out[(j-n)*width:j*width])
			j -= n
		} else {
			clear(out[k*width : i*width])
		}
		i = k
	}
}

// runStart returns the first row of the run of rows ending at row i-1
// (exclusive end i) whose bits in bm (from bit off) all equal set, going no
// lower than row floor. It looks at up to 64 bits of the bitmap at a time.
func runStart(bm []byte, off, i, floor int, set bool) int {
	k := i
	for k > floor {
		p := off + k - 1
		// The word of bits that ends with p's byte (or p's byte alone near
		// the bitmap's start), p's bit moved to the top: the run is its
		// leading ones.
		var w uint64
		have := p%8 + 1
		if q := p/8 - 7; q >= 0 {
			w = binary.LittleEndian.Uint64(bm[q:])
			have += 56
		} else {
			w = uint64(bm[p/8])
		}
		if !set {
			w = ^w
		}
		run := bits.LeadingZeros64(^(w << (64 - have)))
		run = min(run, have, k-floor)
		k -= run
		if run < have {
			break
		}
	}
	return k
}

// pieceValidity is the validity bitmap of a piece of rows read page by
// page: made at the first page that has definition levels (the rows before
// it are all valid), absent while no page had any.
type pieceValidity struct {
	buf    *memory.Buffer
	bitmap []byte
}

// take records the validity of rows [done, done+k) of a piece of n rows
// from a page's definition levels (nil: a page without NULLs) and returns
// how many of those rows hold a value.
func (v *pieceValidity) take(mem memory.Allocator, n int, levels *levelDecoder, done, k int) (int, error) {
	if levels == nil {
		if v.buf != nil {
			setBitRange(v.bitmap, done, k)
		}
		return k, nil
	}
	if v.buf == nil {
		v.buf = mempool.NewOutputBuffer(mem, (n+7)/8)
		v.bitmap = v.buf.Bytes()
		clear(v.bitmap)
		setBitRange(v.bitmap, 0, done)
	}
	return levels.take(k, v.bitmap, done)
}

// release gives the bitmap back (an array made from it holds its own
// reference).
func (v *pieceValidity) release() {
	if v.buf != nil {
		v.buf.Release()
		v.buf, v.bitmap = nil, nil
	}
}
