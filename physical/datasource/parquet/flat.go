package parquet

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The scan's readers for what other writers produce: flat columns, REQUIRED
// or OPTIONAL (parquet_levels.go), of INT32, INT64 (integers and
// timestamps, in the unit stored), FLOAT, DOUBLE and decimals stored as
// FIXED_LEN_BYTE_ARRAY, whose pages may mix PLAIN,
// dictionary codes (a writer falls back to PLAIN inside a chunk when its
// dictionary grows too large), DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT,
// in data pages v1 or v2. arrow's record reader reads such columns through
// its generic level and builder machinery, and decodes every big-endian
// FIXED_LEN_BYTE_ARRAY decimal one by one; here each page's values are
// decoded in bulk straight into the batch and spread over its valid rows.
// The arrays are those arrow's reader gives for the column as the manifest
// reads it (dates and integer decimals as stored integers), so the rest of
// the scan shapes them as before.

// flatEncodings are the encodings a chunk read by a flatColumn may list:
// RLE for its definition levels.
var flatEncodings = []parquet.Encoding{
	parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict,
	parquet.Encodings.RLE, parquet.Encodings.DeltaBinaryPacked, parquet.Encodings.ByteStreamSplit,
}

// flatChunks reports whether leaf is flat (no repetition, at most one
// level of definition) and its chunks in every one of rowGroups are
// unencrypted and list only encodings among encs.
func flatChunks(md *metadata.FileMetaData, leaf int, rowGroups []int, encs []parquet.Encoding) bool {
	col := md.Schema.Column(leaf)
	if col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
		return false
	}
	for _, rg := range rowGroups {
		cc, err := md.RowGroup(rg).ColumnChunk(leaf)
		if err != nil || cc.CryptoMetadata() != nil {
			return false
		}
		for _, e := range cc.Encodings() {
			if !slices.Contains(encs, e) {
				return false
			}
		}
	}
	return true
}

// flatColumns returns, for each read field, whether the scan reads it with
// a flatColumn: a flat leaf whose type as read and physical type are a pair
// flatColumn decodes, in chunks flatChunks accepts.
func flatColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups []int) []bool {
	out := make([]bool, len(fields))
	md := rdr.MetaData()
	for j, c := range fields {
		sf := ManifestLeaf(m, c)
		if sf == nil {
			continue
		}
		col := md.Schema.Column(sf.ColIndex)
		if flatWidth(sf.Field.Type, col.PhysicalType(), col.TypeLength()) == 0 {
			continue
		}
		out[j] = flatChunks(md, sf.ColIndex, rowGroups, flatEncodings)
	}
	return out
}

// flatWidth is the byte width of a value of type t read from physical type
// phys (of typeLen bytes for FIXED_LEN_BYTE_ARRAY), or 0 when flatColumn
// does not take the pair.
func flatWidth(t arrow.DataType, phys parquet.Type, typeLen int) int {
	switch {
	case t.ID() == arrow.INT32 && phys == parquet.Types.Int32,
		t.ID() == arrow.FLOAT32 && phys == parquet.Types.Float:
		return 4
	case t.ID() == arrow.INT64 && phys == parquet.Types.Int64,
		t.ID() == arrow.TIMESTAMP && phys == parquet.Types.Int64,
		t.ID() == arrow.FLOAT64 && phys == parquet.Types.Double:
		return 8
	case t.ID() == arrow.DECIMAL128 && phys == parquet.Types.FixedLenByteArray && typeLen >= 1 && typeLen <= 16:
		return 16
	}
	return 0
}

// flatColumn reads one column chosen by flatColumns, in batches of any
// size.
type flatColumn struct {
	pages    columnPages
	typ      arrow.DataType
	maxDef   int16
	phys     parquet.Type
	srcWidth int // bytes of a PLAIN value
	width    int // bytes of a value as read
	dict     []byte
	dictLen  int
	haveDict bool
	levels   levelDecoder
	// The current data page.
	page  flatPage
	enc   parquet.Encoding
	codes codeDecoder
	delta deltaDecoder
	idx   []int32 // scratch codes
	wide  []int64 // scratch for INT32 delta values
	// A BYTE_STREAM_SPLIT page: its whole values, their count, the next.
	bss         []byte
	bssN, bssAt int
	scratch     []byte
}

func newFlatColumn(rdr *file.Reader, leaf int, rowGroups []int, typ arrow.DataType) *flatColumn {
	col := rdr.MetaData().Schema.Column(leaf)
	c := &flatColumn{
		pages: columnPages{rdr: rdr, leaf: leaf, rowGroups: rowGroups},
		typ:   typ, maxDef: col.MaxDefinitionLevel(), phys: col.PhysicalType(),
		width: flatWidth(typ, col.PhysicalType(), col.TypeLength()),
	}
	c.srcWidth = c.width
	if c.phys == parquet.Types.FixedLenByteArray {
		c.srcWidth = col.TypeLength()
	}
	return c
}

// read returns the next n values.
func (c *flatColumn) Read(mem memory.Allocator, n int) (arrow.Array, error) {
	buf := mempool.NewOutputBuffer(mem, n*c.width)
	out := buf.Bytes()[:n*c.width]
	var pv pieceValidity // the piece's validity, made at the first page with NULLs
	nulls := 0
	fail := func(err error) (arrow.Array, error) {
		buf.Release()
		pv.release()
		return nil, err
	}
	for done := 0; done < n; {
		if c.page.rows == 0 {
			if err := c.nextPage(); err != nil {
				return fail(err)
			}
			continue
		}
		k := min(c.page.rows, n-done)
		nn, err := pv.take(mem, n, c.page.levels, done, k)
		if err != nil {
			return fail(err)
		}
		if err := c.decode(out[done*c.width:(done+nn)*c.width], nn); err != nil {
			return fail(err)
		}
		if nn < k {
			spreadFixed(out[done*c.width:(done+k)*c.width], c.width, k, pv.bitmap, done, nn)
			nulls += k - nn
		}
		c.page.rows -= k
		done += k
	}
	bufs := []*memory.Buffer{nil, buf}
	if nulls > 0 {
		bufs[0] = pv.buf
	}
	data := array.NewData(c.typ, n, bufs, nil, nulls, 0)
	buf.Release()
	pv.release()
	defer data.Release()
	return array.MakeFromData(data), nil
}

// setBitRange sets bits [from, from+n) of bitmap.
func setBitRange(bitmap []byte, from, n int) {
	if n > 0 {
		bitutil.SetBitsTo(bitmap, int64(from), int64(n), true)
	}
}

// nextPage moves to the next data page, reading a dictionary page on the
// way.
func (c *flatColumn) nextPage() error {
	p, err := c.pages.next()
	if err != nil {
		return err
	}
	if dp, ok := p.(*file.DictionaryPage); ok {
		if err := plainDictionaryPage(dp); err != nil {
			return err
		}
		count, data := int(dp.NumValues()), dp.Data()
		if count < 0 || count > len(data)/c.srcWidth {
			return fmt.Errorf("%w: %d values of %d bytes in %d bytes", errDictCorrupt, count, c.srcWidth, len(data))
		}
		c.dict = slices.Grow(c.dict[:0], count*c.width)[:count*c.width]
		c.convertPlain(c.dict, data[:count*c.srcWidth], count)
		c.dictLen, c.haveDict = count, true
		return nil
	}
	if c.page, err = splitDataPage(p, c.maxDef, &c.levels); err != nil {
		return err
	}
	values := 0
	if v2, ok := p.(*file.DataPageV2); ok {
		values = int(v2.NumValues() - v2.NumNulls())
	} else if c.page.levels != nil {
		values = -1 // known only once the levels are read
	} else {
		values = c.page.rows
	}
	c.enc = parquet.Encoding(p.Encoding())
	switch c.enc {
	case parquet.Encodings.Plain:
		return nil
	case parquet.Encodings.ByteStreamSplit:
		// The values are split into srcWidth streams of equal length.
		if len(c.page.values)%c.srcWidth != 0 {
			return fmt.Errorf("corrupt BYTE_STREAM_SPLIT page of %d bytes for %d-byte values", len(c.page.values), c.srcWidth)
		}
		c.bss, c.bssN, c.bssAt = c.page.values, len(c.page.values)/c.srcWidth, 0
		return nil
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if !c.haveDict {
			return fmt.Errorf("data page before the dictionary page")
		}
		if len(c.page.values) == 0 {
			c.codes = codeDecoder{}
			return nil
		}
		// The page's values count is unknown before its levels are read:
		// bound it by its rows, the codes of NULL rows are never written.
		return c.codes.reset(c.page.values, c.page.rows)
	case parquet.Encodings.DeltaBinaryPacked:
		if c.phys != parquet.Types.Int32 && c.phys != parquet.Types.Int64 {
			break
		}
		return c.delta.resetUpTo(c.page.values, values, c.page.rows)
	}
	return fmt.Errorf("data page encoded %s, which the scan's reader of %s does not take", c.enc, c.phys)
}

// decode decodes the page's next nn values densely into out.
func (c *flatColumn) decode(out []byte, nn int) error {
	if nn == 0 {
		return nil
	}
	switch c.enc {
	case parquet.Encodings.Plain:
		need := nn * c.srcWidth
		if len(c.page.values) < need {
			return fmt.Errorf("corrupt PLAIN page: %d values in %d bytes", nn, len(c.page.values))
		}
		c.convertPlain(out, c.page.values[:need], nn)
		c.page.values = c.page.values[need:]
	case parquet.Encodings.ByteStreamSplit:
		return c.byteStreamSplit(out, nn)
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if c.idx == nil {
			c.idx = make([]int32, dictNumScratch)
		}
		for done := 0; done < nn; {
			k, err := c.codes.decode(c.idx[:min(len(c.idx), nn-done)], c.dictLen)
			if err != nil {
				return err
			}
			if k == 0 {
				return fmt.Errorf("%w: the page's codes ended early", errCodesCorrupt)
			}
			gatherBytes(out[done*c.width:(done+k)*c.width], c.dict, c.idx[:k], c.width)
			done += k
		}
	case parquet.Encodings.DeltaBinaryPacked:
		if c.phys == parquet.Types.Int64 {
			k, err := c.delta.decode(arrow.Int64Traits.CastFromBytes(out)[:nn])
			if err == nil && k < nn {
				err = fmt.Errorf("%w: the page's values ended early", errDeltaCorrupt)
			}
			return err
		}
		c.wide = slices.Grow(c.wide[:0], nn)[:nn]
		k, err := c.delta.decode(c.wide)
		if err == nil && k < nn {
			err = fmt.Errorf("%w: the page's values ended early", errDeltaCorrupt)
		}
		if err != nil {
			return err
		}
		o := arrow.Int32Traits.CastFromBytes(out)[:nn]
		for i, v := range c.wide {
			o[i] = int32(v)
		}
	}
	return nil
}

// byteStreamSplit decodes nn BYTE_STREAM_SPLIT values: byte b of value i
// is at b*count+i of the page, count being the page's values.
func (c *flatColumn) byteStreamSplit(out []byte, nn int) error {
	w := c.srcWidth
	if c.bssAt+nn > c.bssN {
		return fmt.Errorf("corrupt BYTE_STREAM_SPLIT page: %d values wanted, %d left", nn, c.bssN-c.bssAt)
	}
	tmp := slices.Grow(c.scratch[:0], nn*w)[:nn*w]
	for b := range w {
		stream := c.bss[b*c.bssN+c.bssAt : b*c.bssN+c.bssAt+nn]
		for i, v := range stream {
			tmp[i*w+b] = v
		}
	}
	c.scratch = tmp
	c.convertPlain(out, tmp, nn)
	c.bssAt += nn
	return nil
}

// convertPlain turns n PLAIN values src into values as read in dst.
func (c *flatColumn) convertPlain(dst, src []byte, n int) {
	if c.phys != parquet.Types.FixedLenByteArray {
		copy(dst, src)
		return
	}
	flbaToDecimal128(dst, src, n, c.srcWidth)
}

// flbaToDecimal128 turns n big-endian two's complement integers of w bytes
// (a decimal's FIXED_LEN_BYTE_ARRAY values) into little-endian decimal128
// values in dst.
func flbaToDecimal128(dst, src []byte, n, w int) {
	out := unsafe.Slice((*[2]uint64)(unsafe.Pointer(unsafe.SliceData(dst))), n)
	if w <= 8 {
		// Up to 18 digits (the common money decimals): one 64-bit load
		// of the value shifted to the top, then an arithmetic shift down
		// sign-extends it.
		shift := uint(64 - 8*w)
		var buf [8]byte
		for i := range out {
			v := src[i*w : (i+1)*w]
			var x uint64
			if i*w+8 <= len(src) {
				x = binary.BigEndian.Uint64(src[i*w:])
			} else {
				copy(buf[:], v)
				x = binary.BigEndian.Uint64(buf[:])
			}
			lo := int64(x) >> shift
			out[i] = [2]uint64{uint64(lo), uint64(lo >> 63)}
		}
		return
	}
	for i := range out {
		v := src[i*w : (i+1)*w]
		var full [16]byte
		if v[0]&0x80 != 0 {
			for k := range 16 - w {
				full[k] = 0xff
			}
		}
		copy(full[16-w:], v)
		out[i] = [2]uint64{binary.BigEndian.Uint64(full[8:]), binary.BigEndian.Uint64(full[:8])}
	}
}

// gatherBytes sets value i of out to entry codes[i] of dict, values of
// width bytes; the codes were checked against the dictionary's length.
func gatherBytes(out, dict []byte, codes []int32, width int) {
	switch width {
	case 4:
		gatherDict(unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(out))), len(codes)),
			unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(dict))), len(dict)/4), codes)
	case 8:
		gatherDict(unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(out))), len(codes)),
			unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(dict))), len(dict)/8), codes)
	default: // 16: decimal128
		o := unsafe.Slice((*[2]uint64)(unsafe.Pointer(unsafe.SliceData(out))), len(codes))
		d := unsafe.Slice((*[2]uint64)(unsafe.Pointer(unsafe.SliceData(dict))), len(dict)/16)
		for i, k := range codes {
			o[i] = d[k]
		}
	}
}

func (c *flatColumn) Close() {
	c.pages.close()
	c.dict = nil
}
