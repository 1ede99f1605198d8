package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"

	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The scan decodes required INT64 columns written DELTA_BINARY_PACKED
// itself instead of through arrow's record reader: that reader unpacks
// each miniblock into a scratch slice, appends the values one by one to
// another and copies them out again, and was 15 % of the CPU of the 22
// TPC-H queries once their keys and prices were delta encoded. Here the
// deltas are unpacked and prefix-summed in one pass straight into the
// batches. Any other column keeps arrow's reader; a page this code does
// not expect fails the read, loudly.

// deltaColumns returns, for each read field, whether the scan decodes it
// with a deltaColumn: a flat required INT64 column read as Int64 whose
// data pages in every row group read are all DELTA_BINARY_PACKED, without
// a dictionary page or encryption.
func deltaColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups []int) []bool {
	out := make([]bool, len(fields))
	md := rdr.MetaData()
	for j, c := range fields {
		sf := ManifestLeaf(m, c)
		if sf == nil || sf.Field.Type.ID() != arrow.INT64 {
			continue
		}
		col := md.Schema.Column(sf.ColIndex)
		if col.PhysicalType() != parquet.Types.Int64 || col.MaxDefinitionLevel() != 0 || col.MaxRepetitionLevel() != 0 {
			continue
		}
		ok := true
		for _, rg := range rowGroups {
			cc, err := md.RowGroup(rg).ColumnChunk(sf.ColIndex)
			if err != nil || cc.HasDictionaryPage() || cc.CryptoMetadata() != nil || !allDataPages(cc, parquet.Encodings.DeltaBinaryPacked) {
				ok = false
				break
			}
		}
		out[j] = ok
	}
	return out
}

// deltaColumn reads one column chosen by deltaColumns, row group after row
// group, in batches of any size, unpacking each page straight into the
// batches: a page (a whole row group in the generated files, 2 MiB of
// values) decoded into a buffer of its own first would be written and read
// back through memory.
type deltaColumn struct {
	pages columnPages
	dec   deltaDecoder // over the current page
}

func newDeltaColumn(rdr *file.Reader, leaf int, rowGroups []int) *deltaColumn {
	return &deltaColumn{pages: columnPages{rdr: rdr, leaf: leaf, rowGroups: rowGroups}}
}

// read returns the next n values as an Int64 array.
func (c *deltaColumn) Read(mem memory.Allocator, n int) (arrow.Array, error) {
	buf := mempool.NewOutputBuffer(mem, n*8)
	out := arrow.Int64Traits.CastFromBytes(buf.Bytes())
	for done := 0; done < n; {
		if c.dec.left == 0 {
			if err := c.nextPage(); err != nil {
				buf.Release()
				return nil, err
			}
			continue
		}
		k, err := c.dec.decode(out[done:n])
		if err != nil {
			buf.Release()
			return nil, err
		}
		done += k
	}
	data := array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer data.Release()
	return array.NewInt64Data(data), nil
}

// nextPage starts decoding the next data page.
func (c *deltaColumn) nextPage() error {
	p, err := c.pages.next()
	if err != nil {
		return err
	}
	data, err := dataPageValues(p)
	if err != nil {
		return err
	}
	if parquet.Encoding(p.Encoding()) != parquet.Encodings.DeltaBinaryPacked {
		return fmt.Errorf("data page encoded %s where DELTA_BINARY_PACKED was recorded", parquet.Encoding(p.Encoding()))
	}
	return c.dec.reset(data, int(p.NumValues()))
}

func (c *deltaColumn) Close() { c.pages.close() }

// columnPages walks the pages of one column chunk after another over a
// list of row groups, for the columns the scan decodes itself.
type columnPages struct {
	rdr       *file.Reader
	leaf      int
	rowGroups []int // row groups still to open
	pages     file.PageReader
}

// next returns the next page, opening the next row group when the current
// one has no page left. The page's bytes stay valid until the next call.
func (c *columnPages) next() (file.Page, error) {
	for {
		if c.pages != nil && c.pages.Next() {
			return c.pages.Page(), nil
		}
		if c.pages != nil {
			if err := c.pages.Err(); err != nil {
				return nil, err
			}
			c.pages.Close()
			c.pages = nil
		}
		if len(c.rowGroups) == 0 {
			return nil, errors.New("column ended before the row groups' row count")
		}
		pr, err := c.rdr.RowGroup(c.rowGroups[0]).GetColumnPageReader(c.leaf)
		if err != nil {
			return nil, err
		}
		c.pages, c.rowGroups = pr, c.rowGroups[1:]
	}
}

// close releases the open page reader.
func (c *columnPages) close() {
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

// dataPageValues returns the encoded values of a data page of a flat
// required column (whose pages hold no levels).
func dataPageValues(p file.Page) ([]byte, error) {
	switch p := p.(type) {
	case *file.DataPageV1:
		return p.Data(), nil
	case *file.DataPageV2:
		return p.Data()[p.DefinitionLevelByteLen()+p.RepetitionLevelByteLen():], nil
	}
	return nil, fmt.Errorf("unexpected %T where a data page was due", p)
}

var errDeltaCorrupt = errors.New("corrupt DELTA_BINARY_PACKED page")

// deltaDecoder decodes one DELTA_BINARY_PACKED page in pieces of any size.
// Layout (Parquet format spec): a header of uvarint block size, uvarint
// miniblocks per block, uvarint value count, zigzag first value; then
// blocks of a zigzag minimum delta, one bit width byte per miniblock, and
// the miniblocks, each block size / miniblocks deltas (minus the minimum)
// bit-packed little-endian. Sums wrap, as the writer's differences did.
type deltaDecoder struct {
	data       []byte // the page from the next unread block or miniblock
	left       int    // values not yet handed out
	first      bool   // the header's first value is not yet handed out
	last       uint64 // the last value decoded (at first, the first value)
	perMini    int
	miniblocks int
	minDelta   uint64
	widths     []byte  // bit widths of the current block's miniblocks
	mini       int     // next miniblock of the current block
	pend       []int64 // decoded values of a miniblock not yet handed out
	scratch    []int64
}

// resetUpTo starts a page of count values, or (count < 0) of as many as
// its header says, at most rows.
func (d *deltaDecoder) resetUpTo(data []byte, count, rows int) error {
	if count < 0 {
		count = -rows
	}
	return d.reset(data, count)
}

// reset starts a page of count values; a negative count -m takes the
// header's count if it is at most m.
func (d *deltaDecoder) reset(data []byte, count int) error {
	d.left, d.pend = 0, nil
	var header [3]uint64 // block size, miniblocks per block, value count
	for i := range header {
		v, k := binary.Uvarint(data)
		if k <= 0 {
			return errDeltaCorrupt
		}
		header[i], data = v, data[k:]
	}
	blockSize, miniblocks, total := header[0], header[1], header[2]
	first, k := binary.Varint(data)
	if k <= 0 {
		return errDeltaCorrupt
	}
	data = data[k:]
	if count < 0 && total <= uint64(-count) {
		count = int(total)
	}
	if total != uint64(count) {
		return fmt.Errorf("%w: %d values where the page holds %d", errDeltaCorrupt, total, count)
	}
	if count > 1 && (miniblocks == 0 || blockSize == 0 || blockSize%miniblocks != 0 || (blockSize/miniblocks)%8 != 0 || blockSize > 1<<20) {
		return fmt.Errorf("%w: block of %d values in %d miniblocks", errDeltaCorrupt, blockSize, miniblocks)
	}
	*d = deltaDecoder{
		data: data, left: count, first: count > 0, last: uint64(first),
		miniblocks: int(miniblocks), scratch: d.scratch,
	}
	if count > 1 {
		d.perMini = int(blockSize / miniblocks)
		d.mini = d.miniblocks // a block header comes next
	}
	return nil
}

// decode hands out the next min(len(out), left) values into out and
// returns how many.
func (d *deltaDecoder) decode(out []int64) (int, error) {
	want := min(len(out), d.left)
	out = out[:want]
	done := 0
	if want > 0 && d.first {
		out[0] = int64(d.last)
		d.first = false
		done = 1
	}
	for done < want {
		if len(d.pend) > 0 {
			k := copy(out[done:], d.pend)
			d.pend = d.pend[k:]
			done += k
			continue
		}
		if d.mini == d.miniblocks {
			minDelta, k := binary.Varint(d.data)
			if k <= 0 || len(d.data) < k+d.miniblocks {
				return done, d.fail()
			}
			d.minDelta = uint64(minDelta)
			d.widths = d.data[k : k+d.miniblocks]
			d.data = d.data[k+d.miniblocks:]
			d.mini = 0
		}
		w := d.widths[d.mini]
		if w > 64 {
			return done, d.fail()
		}
		size := d.perMini * int(w) / 8
		if len(d.data) < size {
			return done, d.fail()
		}
		// The miniblock's values still to hand out (the page's last
		// miniblock may be padded past them): into out when they fit,
		// else into scratch, handed out from there.
		m := min(d.perMini, d.left-done)
		dst := out[done:]
		if len(dst) < m {
			if cap(d.scratch) < d.perMini {
				d.scratch = make([]int64, d.perMini)
			}
			dst = d.scratch
		}
		// The whole rest of the page goes in, so that 8-byte loads near
		// the miniblock's end can read past it.
		d.last = uint64(unpackDeltas(d.data, int(w), m, d.minDelta, d.last, dst[:m]))
		d.data = d.data[size:]
		d.mini++
		if len(out)-done < m {
			d.pend = dst[:m]
			continue
		}
		done += m
	}
	d.left -= want
	return want, nil
}

func (d *deltaDecoder) fail() error {
	d.left, d.pend = 0, nil
	return errDeltaCorrupt
}

// decodeDeltaBinaryPacked decodes a whole DELTA_BINARY_PACKED page of
// exactly len(out) values into out.
func decodeDeltaBinaryPacked(data []byte, out []int64) error {
	var d deltaDecoder
	if err := d.reset(data, len(out)); err != nil {
		return err
	}
	_, err := d.decode(out)
	return err
}

// unpackDeltas unpacks the first n w-bit deltas of the miniblock at the
// start of mb, adds minDelta to each and sums them onto last into out; it
// returns the last value. All in uint64, so that sums wrap as the writer's
// differences did.
func unpackDeltas(mb []byte, w, n int, minDelta, last uint64, out []int64) int64 {
	if w == 0 {
		for j := range out[:n] {
			last += minDelta
			out[j] = int64(last)
		}
		return int64(last)
	}
	mask := uint64(1)<<w - 1
	if w == 64 {
		mask = ^uint64(0)
	}
	j := 0
	if w <= 56 {
		// Whole 8-byte loads while they stay inside mb.
		safe := 0
		if len(mb) >= 8 {
			safe = min(n, ((len(mb)-8)*8)/w+1)
		}
		o := out[:safe]
		k0 := 0
		if w <= 14 {
			// Four values per 8-byte load.
			for ; k0+3 < len(o); k0 += 4 {
				bit := k0 * w
				word := binary.LittleEndian.Uint64(mb[bit>>3:bit>>3+8]) >> (bit & 7)
				last += minDelta + word&mask
				o[k0] = int64(last)
				last += minDelta + (word>>w)&mask
				o[k0+1] = int64(last)
				last += minDelta + (word>>(2*w))&mask
				o[k0+2] = int64(last)
				last += minDelta + (word>>(3*w))&mask
				o[k0+3] = int64(last)
			}
		}
		if w <= 28 {
			// Two values per 8-byte load, their deltas summed first so
			// that the running sum takes one addition per load (random
			// 24-bit deltas: 1.9-2.0 -> 1.8-1.9 ms per 1M values; the
			// same for four values per load was slower).
			for ; k0+1 < len(o); k0 += 2 {
				bit := k0 * w
				word := binary.LittleEndian.Uint64(mb[bit>>3:bit>>3+8]) >> (bit & 7)
				s0 := minDelta + word&mask
				s1 := s0 + minDelta + (word>>w)&mask
				g := o[k0 : k0+2 : k0+2]
				g[0], g[1] = int64(last+s0), int64(last+s1)
				last += s1
			}
		}
		for k := k0; k < len(o); k++ {
			bit := k * w
			v := binary.LittleEndian.Uint64(mb[bit>>3:bit>>3+8]) >> (bit & 7) & mask
			last += minDelta + v
			o[k] = int64(last)
		}
		j = safe
	}
	for ; j < n; j++ {
		last += minDelta + readBits(mb, j*w, w)
		out[j] = int64(last)
	}
	return int64(last)
}

// readBits reads the w-bit little-endian value at bit offset bit of b,
// byte by byte (the end of a page, and widths above 56).
func readBits(b []byte, bit, w int) uint64 {
	var v uint64
	for got := 0; got < w; {
		byteIdx, off := (bit+got)>>3, (bit+got)&7
		take := min(8-off, w-got)
		v |= uint64(b[byteIdx]>>off) & (uint64(1)<<take - 1) << got
		got += take
	}
	return v
}
