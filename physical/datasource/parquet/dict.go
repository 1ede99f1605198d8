package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"sluice/physical/mempool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The scan reads the dictionary codes of flat string columns (required, or
// optional with their definition levels, parquet_levels.go) that are
// dictionary-encoded throughout (flags, modes, priorities, brands) itself.
// arrow's reader decodes each page's codes into a slice of uint64, copies
// them into a slice of int and appends those to an int32 builder one by
// one: 16 % of TPC-H q1, for two one-byte flags. Here the codes are
// unpacked straight into the batch's int32 buffer. The batches hold the
// same dictionary arrays arrow's reader gives (dictionary<int32, utf8>), so
// the scan's dictionary filters and decoding take them unchanged.

// dictColumns returns, for each read field, whether the scan reads it with
// a dictColumn: a flat (required or optional) column among dictLeaves (the string leaves
// whose chunks hold a dictionary page and dictionary-encoded data pages
// only, see DictionaryOnlyStrings), unencrypted in every row group read.
func dictColumns(m *pqarrow.SchemaManifest, rdr *file.Reader, fields, rowGroups, dictLeaves []int) []bool {
	out := make([]bool, len(fields))
	md := rdr.MetaData()
	for j, c := range fields {
		sf := ManifestLeaf(m, c)
		if sf == nil || !slices.Contains(dictLeaves, sf.ColIndex) {
			continue
		}
		col := md.Schema.Column(sf.ColIndex)
		if col.MaxDefinitionLevel() > 1 || col.MaxRepetitionLevel() != 0 {
			continue
		}
		ok := true
		for _, rg := range rowGroups {
			cc, err := md.RowGroup(rg).ColumnChunk(sf.ColIndex)
			if err != nil || cc.CryptoMetadata() != nil {
				ok = false
				break
			}
		}
		out[j] = ok
	}
	return out
}

// dictColumn reads one column chosen by dictColumns as dictionary arrays,
// in batches of any size. Batches within one row group share its
// dictionary array (the scan's dictionary filters evaluate a dictionary
// once); a batch that spans row groups gets their dictionaries
// concatenated, the later codes shifted past the earlier entries.
type dictColumn struct {
	pages  columnPages
	maxDef int16
	dict   *array.String // the open row group's dictionary
	levels levelDecoder
	page   flatPage    // the current data page
	codes  codeDecoder // over the current data page
}

func newDictColumn(rdr *file.Reader, leaf int, rowGroups []int) *dictColumn {
	return &dictColumn{pages: columnPages{rdr: rdr, leaf: leaf, rowGroups: rowGroups},
		maxDef: rdr.MetaData().Schema.Column(leaf).MaxDefinitionLevel()}
}

var dictStringType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// read returns the next n values as a dictionary<int32, utf8> array.
func (c *dictColumn) Read(mem memory.Allocator, n int) (arrow.Array, error) {
	buf := mempool.NewOutputBuffer(mem, n*4)
	out := arrow.Int32Traits.CastFromBytes(buf.Bytes())[:n]
	var pv pieceValidity // the piece's validity, made at the first page with NULLs
	nulls := 0
	var dicts []arrow.Array // the dictionaries the batch's codes index, in order
	base := 0               // entries of dicts before the last one
	defer func() {
		for _, d := range dicts {
			d.Release()
		}
	}()
	fail := func(err error) (arrow.Array, error) {
		buf.Release()
		pv.release()
		return nil, err
	}
	for done := 0; done < n; {
		if c.page.rows == 0 {
			if err := c.nextPage(mem); err != nil {
				return fail(err)
			}
			continue
		}
		if len(dicts) == 0 || dicts[len(dicts)-1] != arrow.Array(c.dict) {
			if len(dicts) > 0 {
				base += dicts[len(dicts)-1].Len()
			}
			c.dict.Retain()
			dicts = append(dicts, c.dict)
		}
		k := min(c.page.rows, n-done)
		nn, err := pv.take(mem, n, c.page.levels, done, k)
		if err != nil {
			return fail(err)
		}
		got, err := c.codes.decode(out[done:done+nn], c.dict.Len())
		if err == nil && got < nn {
			err = fmt.Errorf("%w: the page's codes ended early", errCodesCorrupt)
		}
		if err != nil {
			return fail(err)
		}
		if base > 0 {
			for i := done; i < done+nn; i++ {
				out[i] += int32(base)
			}
		}
		if nn < k {
			spreadFixed(buf.Bytes()[done*4:(done+k)*4], 4, k, pv.bitmap, done, nn)
			nulls += k - nn
		}
		c.page.rows -= k
		done += k
	}
	dict := arrow.Array(nil)
	switch len(dicts) {
	case 0: // n == 0
		dict = array.MakeArrayOfNull(mem, arrow.BinaryTypes.String, 0)
	case 1:
		dict = dicts[0]
		dict.Retain()
	default:
		var err error
		if dict, err = array.Concatenate(dicts, mem); err != nil {
			return fail(err)
		}
	}
	defer dict.Release()
	bufs := []*memory.Buffer{nil, buf}
	if nulls > 0 {
		bufs[0] = pv.buf
	}
	data := array.NewData(dictStringType, n, bufs, nil, nulls, 0)
	buf.Release()
	pv.release()
	data.SetDictionary(dict.Data())
	defer data.Release()
	return array.NewDictionaryData(data), nil
}

// nextPage moves to the next data page, reading the dictionary page that
// opens each row group on the way.
func (c *dictColumn) nextPage(mem memory.Allocator) error {
	p, err := c.pages.next()
	if err != nil {
		return err
	}
	if dp, ok := p.(*file.DictionaryPage); ok {
		if err := plainDictionaryPage(dp); err != nil {
			return err
		}
		d, err := plainStrings(mem, dp.Data(), int(dp.NumValues()))
		if err != nil {
			return err
		}
		if c.dict != nil {
			c.dict.Release()
		}
		c.dict = d
		return nil
	}
	if c.page, err = splitDataPage(p, c.maxDef, &c.levels); err != nil {
		return err
	}
	return c.codes.startCodes(p, c.page, c.dict != nil)
}

// plainDictionaryPage checks that a dictionary page holds PLAIN values.
func plainDictionaryPage(dp *file.DictionaryPage) error {
	if enc := parquet.Encoding(dp.Encoding()); enc != parquet.Encodings.Plain && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("dictionary page encoded %s, want PLAIN", enc)
	}
	return nil
}

// startCodes starts d on the values of data page p (fp, taken apart from
// its levels) of a column whose data pages are all dictionary codes;
// haveDict says its dictionary page was read. A page of NULLs only may
// hold no codes at all.
func (d *codeDecoder) startCodes(p file.Page, fp flatPage, haveDict bool) error {
	if enc := parquet.Encoding(p.Encoding()); enc != parquet.Encodings.RLEDict && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("data page encoded %s where only dictionary codes were recorded", enc)
	}
	if !haveDict {
		return errors.New("data page before the dictionary page")
	}
	if len(fp.values) == 0 {
		*d = codeDecoder{}
		return nil
	}
	// The page's count of values is known only once its levels are read:
	// bound it by its rows; codes past its values are never asked for.
	return d.reset(fp.values, fp.rows)
}

// startPage starts d on data page p of a column whose data pages are all
// dictionary codes; haveDict says its dictionary page was read.
func (d *codeDecoder) startPage(p file.Page, haveDict bool) error {
	data, err := dataPageValues(p)
	if err != nil {
		return err
	}
	if enc := parquet.Encoding(p.Encoding()); enc != parquet.Encodings.RLEDict && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("data page encoded %s where only dictionary codes were recorded", enc)
	}
	if !haveDict {
		return errors.New("data page before the dictionary page")
	}
	return d.reset(data, int(p.NumValues()))
}

func (c *dictColumn) Close() {
	c.pages.close()
	if c.dict != nil {
		c.dict.Release()
		c.dict = nil
	}
}

var errDictCorrupt = errors.New("corrupt dictionary page")

// plainStrings decodes count PLAIN byte arrays (each a 4-byte little-endian
// length and the bytes) into a utf8 array.
func plainStrings(mem memory.Allocator, data []byte, count int) (*array.String, error) {
	if count < 0 || count > len(data)/4 {
		return nil, fmt.Errorf("%w: %d values in %d bytes", errDictCorrupt, count, len(data))
	}
	offBuf := mempool.NewOutputBuffer(mem, (count+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())[:count+1]
	total, pos := 0, 0
	for i := range count {
		if len(data)-pos < 4 {
			offBuf.Release()
			return nil, fmt.Errorf("%w: value %d of %d is cut off", errDictCorrupt, i, count)
		}
		l := int(binary.LittleEndian.Uint32(data[pos:]))
		if l > len(data)-pos-4 {
			offBuf.Release()
			return nil, fmt.Errorf("%w: value %d of %d is cut off", errDictCorrupt, i, count)
		}
		offs[i] = int32(total)
		total += l
		pos += 4 + l
	}
	offs[count] = int32(total)
	valBuf := mempool.NewOutputBuffer(mem, total)
	vals := valBuf.Bytes()
	pos = 0
	for i := range count {
		l := int(offs[i+1] - offs[i])
		copy(vals[offs[i]:], data[pos+4:pos+4+l])
		pos += 4 + l
	}
	d := array.NewData(arrow.BinaryTypes.String, count, []*memory.Buffer{nil, offBuf, valBuf}, nil, 0, 0)
	offBuf.Release()
	valBuf.Release()
	defer d.Release()
	return array.NewStringData(d), nil
}

var errCodesCorrupt = errors.New("corrupt dictionary-encoded data page")

// codeDecoder decodes the dictionary codes of one data page in pieces of
// any size. Layout (Parquet format spec, RLE_DICTIONARY): a bit width
// byte, then runs until the page's values are covered, each behind a
// uvarint header: an even header is a repeated run of header/2 copies of
// one value (in the width's bytes, little-endian), an odd one a bit-packed
// run of header/2 groups of eight values, each group width bytes.
type codeDecoder struct {
	data   []byte // from the next run header
	width  int
	left   int // values of the page not yet handed out
	run    int // values of the current run not yet handed out
	packed bool
	value  uint32 // a repeated run's value
	bits   []byte // a bit-packed run's groups (and the rest of the page)
	at     int    // a bit-packed run's next value
}

// reset starts a page of count values.
func (d *codeDecoder) reset(data []byte, count int) error {
	*d = codeDecoder{}
	if count == 0 {
		return nil
	}
	if len(data) == 0 || data[0] > 32 {
		return fmt.Errorf("%w: no bit width", errCodesCorrupt)
	}
	d.width, d.data, d.left = int(data[0]), data[1:], count
	return nil
}

// nextRun reads the next run header. A run may claim more values than the
// page has left (the last bit-packed group is padded): the rest are never
// handed out.
func (d *codeDecoder) nextRun() error {
	h, k := binary.Uvarint(d.data)
	if k <= 0 {
		return d.fail()
	}
	d.data = d.data[k:]
	n := min(h>>1, uint64(d.left)) // values handed out from the run
	if h&1 == 0 {
		nb := (d.width + 7) / 8
		if len(d.data) < nb {
			return d.fail()
		}
		var v [4]byte
		copy(v[:], d.data[:nb])
		d.packed, d.value, d.run = false, binary.LittleEndian.Uint32(v[:]), int(n)
		d.data = d.data[nb:]
		return nil
	}
	if d.width > 0 && h>>1 > uint64(len(d.data)/d.width) {
		return d.fail()
	}
	size := int(h>>1) * d.width
	d.packed, d.bits, d.at, d.run = true, d.data, 0, int(min(n*8, uint64(d.left)))
	d.data = d.data[size:]
	return nil
}

// decode hands out the next min(len(out), left) codes into out and
// returns how many; a code not below entries fails it.
func (d *codeDecoder) decode(out []int32, entries int) (int, error) {
	want := min(len(out), d.left)
	done := 0
	for done < want {
		if d.run == 0 {
			if err := d.nextRun(); err != nil {
				return done, err
			}
			continue
		}
		k := min(d.run, want-done)
		dst := out[done : done+k]
		if !d.packed {
			if d.value >= uint32(entries) {
				return done, d.outOfRange(int64(d.value), entries)
			}
			for i := range dst {
				dst[i] = int32(d.value)
			}
		} else {
			m := unpackCodes(d.bits, d.width, d.at, dst)
			d.at += k
			if m >= uint32(entries) {
				return done, d.outOfRange(int64(m), entries)
			}
		}
		d.run -= k
		d.left -= k
		done += k
	}
	return done, nil
}

func (d *codeDecoder) fail() error {
	d.left, d.run = 0, 0
	return errCodesCorrupt
}

func (d *codeDecoder) outOfRange(code int64, entries int) error {
	d.left, d.run = 0, 0
	return fmt.Errorf("%w: dictionary code %d of a dictionary of %d", errCodesCorrupt, code, entries)
}

// unpackCodes unpacks len(out) w-bit codes starting at code from of the
// bit-packed groups at the start of src (w <= 32) and returns the largest.
func unpackCodes(src []byte, w, from int, out []int32) uint32 {
	if w == 0 {
		clear(out)
		return 0
	}
	mask := uint64(1)<<w - 1
	var top uint64
	j, i := 0, from
	if w <= 8 {
		// Whole groups of eight with one 8-byte load: a group is w bytes.
		for ; j < len(out) && i%8 != 0; j, i = j+1, i+1 {
			v := readBits(src, i*w, w)
			out[j], top = int32(v), max(top, v)
		}
		for ; len(out)-j >= 8 && i/8*w+8 <= len(src); j, i = j+8, i+8 {
			o := i / 8 * w
			word := binary.LittleEndian.Uint64(src[o : o+8])
			g := out[j : j+8 : j+8]
			v0, v1 := word&mask, word>>w&mask
			v2, v3 := word>>(2*w)&mask, word>>(3*w)&mask
			v4, v5 := word>>(4*w)&mask, word>>(5*w)&mask
			v6, v7 := word>>(6*w)&mask, word>>(7*w)&mask
			g[0], g[1], g[2], g[3] = int32(v0), int32(v1), int32(v2), int32(v3)
			g[4], g[5], g[6], g[7] = int32(v4), int32(v5), int32(v6), int32(v7)
			top = max(top, max(max(v0, v1), max(v2, v3)), max(max(v4, v5), max(v6, v7)))
		}
	}
	if w > 8 && w <= 14 {
		// Half groups with one 8-byte load each (dates: 12 bits): four
		// codes take 4w <= 56 bits, starting at most 7 bits into the
		// load.
		for ; j < len(out) && i%8 != 0; j, i = j+1, i+1 {
			v := readBits(src, i*w, w)
			out[j], top = int32(v), max(top, v)
		}
		half, shift := 4*w>>3, uint(4*w&7)
		for ; len(out)-j >= 8 && i/8*w+half+8 <= len(src); j, i = j+8, i+8 {
			o := i / 8 * w
			lo := binary.LittleEndian.Uint64(src[o : o+8])
			hi := binary.LittleEndian.Uint64(src[o+half:o+half+8]) >> shift
			g := out[j : j+8 : j+8]
			v0, v1 := lo&mask, lo>>w&mask
			v2, v3 := lo>>(2*w)&mask, lo>>(3*w)&mask
			v4, v5 := hi&mask, hi>>w&mask
			v6, v7 := hi>>(2*w)&mask, hi>>(3*w)&mask
			g[0], g[1], g[2], g[3] = int32(v0), int32(v1), int32(v2), int32(v3)
			g[4], g[5], g[6], g[7] = int32(v4), int32(v5), int32(v6), int32(v7)
			top = max(top, max(max(v0, v1), max(v2, v3)), max(max(v4, v5), max(v6, v7)))
		}
	}
	// One 8-byte load per code while it stays inside src (a code's bits
	// start at most 7 bits into the load: 7 + 32 fit).
	for ; j < len(out); j, i = j+1, i+1 {
		bit := i * w
		var v uint64
		if o := bit >> 3; o+8 <= len(src) {
			v = binary.LittleEndian.Uint64(src[o:o+8]) >> (bit & 7) & mask
		} else {
			v = readBits(src, bit, w)
		}
		out[j], top = int32(v), max(top, v)
	}
	return uint32(top)
}
