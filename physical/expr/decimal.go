package expr

import (
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Exact 128-bit decimal arithmetic. arrow's decimal128 scaling and division
// go through math/big on every call; these helpers stay in 64/128-bit
// registers for the common case and fall back to big.Int only when needed.

// errDecimalOverflow reports a decimal result that does not fit its type.
var errDecimalOverflow = NewDataError("decimal overflow")

// errDivByZero reports division (or modulo) by zero.
var errDivByZero = NewDataError("division by zero")

// pow10 holds 10^0 … 10^38.
var pow10 = func() [39]decimal128.Num {
	var p [39]decimal128.Num
	for i := range p {
		p[i] = decimal128.GetScaleMultiplier(i)
	}
	return p
}()

// fitsInt64 reports whether n is representable as an int64.
func fitsInt64(n decimal128.Num) bool {
	return n.HighBits() == int64(n.LowBits())>>63
}

// absU128 returns |n| as unsigned hi/lo and whether n was negative.
func absU128(n decimal128.Num) (hi, lo uint64, neg bool) {
	hi, lo = uint64(n.HighBits()), n.LowBits()
	if n.HighBits() < 0 {
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
		return hi, lo, true
	}
	return hi, lo, false
}

// fromU128 builds ±(hi,lo); ok is false when the magnitude needs 128 bits.
func fromU128(hi, lo uint64, neg bool) (decimal128.Num, bool) {
	if hi>>63 != 0 {
		return decimal128.Num{}, false
	}
	n := decimal128.New(int64(hi), lo)
	if neg {
		n = n.Negate()
	}
	return n, true
}

// fitsPrecision reports whether |n| < 10^p.
func fitsPrecision(n decimal128.Num, p int32) bool {
	if p >= 19 && fitsInt64(n) {
		return true
	}
	if p >= 38 {
		p = 38
	}
	hi, lo, _ := absU128(n)
	b := pow10[p]
	bh, bl := uint64(b.HighBits()), b.LowBits()
	return hi < bh || (hi == bh && lo < bl)
}

// mulChecked multiplies exactly; ok is false on 128-bit overflow.
func mulChecked(a, b decimal128.Num) (decimal128.Num, bool) {
	if fitsInt64(a) && fitsInt64(b) {
		x, y := int64(a.LowBits()), int64(b.LowBits())
		hi, lo := bits.Mul64(uint64(absI64(x)), uint64(absI64(y)))
		neg := (x < 0) != (y < 0)
		if hi == 0 && lo>>63 == 0 {
			v := int64(lo)
			if neg {
				v = -v
			}
			return decimal128.FromI64(v), true
		}
		return fromU128(hi, lo, neg)
	}
	ah, al, an := absU128(a)
	bh, bl, bn := absU128(b)
	if ah != 0 && bh != 0 {
		return decimal128.Num{}, false
	}
	if ah != 0 {
		ah, al, bh, bl = bh, bl, ah, al
	}
	// Now a fits in 64 bits: (al) * (bh:bl).
	h1, l1 := bits.Mul64(al, bl)
	h2, l2 := bits.Mul64(al, bh)
	if h2 != 0 {
		return decimal128.Num{}, false
	}
	hi, carry := bits.Add64(h1, l2, 0)
	if carry != 0 {
		return decimal128.Num{}, false
	}
	return fromU128(hi, l1, an != bn)
}

func absI64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// divRound returns a/b rounded half away from zero. b must be non-zero.
func divRound(a, b decimal128.Num) decimal128.Num {
	if fitsInt64(a) && fitsInt64(b) {
		x, y := int64(a.LowBits()), int64(b.LowBits())
		if x != -1<<63 && y != -1<<63 {
			ux, uy := uint64(absI64(x)), uint64(absI64(y))
			q, r := ux/uy, ux%uy
			if r >= uy-r {
				q++
			}
			v := int64(q)
			if (x < 0) != (y < 0) {
				v = -v
			}
			return decimal128.FromI64(v)
		}
	}
	ah, al, an := absU128(a)
	bh, bl, bn := absU128(b)
	if bh == 0 && bl != 0 {
		// 128-by-64 long division.
		qh := ah / bl
		r1 := ah % bl
		ql, r := bits.Div64(r1, al, bl)
		if r >= bl-r {
			var c uint64
			ql, c = bits.Add64(ql, 1, 0)
			qh += c
		}
		n, _ := fromU128(qh, ql, an != bn)
		return n
	}
	return bigDivRound(a.BigInt(), b.BigInt())
}

// bigDivRound is divRound on big integers; the quotient is assumed to fit.
func bigDivRound(x, y *big.Int) decimal128.Num {
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(new(big.Int).Abs(y)) >= 0 {
		if x.Sign()*y.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return decimal128.FromBigInt(q)
}

// rescale changes n's scale from `from` to `to`, rounding half away from
// zero when reducing; ok is false on overflow of 128 bits.
func rescale(n decimal128.Num, from, to int32) (decimal128.Num, bool) {
	switch {
	case to == from:
		return n, true
	case to > from:
		d := to - from
		if d > 38 {
			return n, n.Sign() == 0
		}
		return mulChecked(n, pow10[d])
	default:
		d := from - to
		if d > 38 {
			return decimal128.Num{}, true
		}
		return divRound(n, pow10[d]), true
	}
}

// decDivide computes a/b (scales sa, sb) at result scale sr, rounding half
// away from zero on the last digit.
func decDivide(a, b decimal128.Num, sa, sb, sr int32) (decimal128.Num, error) {
	if b.Sign() == 0 {
		return decimal128.Num{}, errDivByZero
	}
	// a/10^sa / (b/10^sb) = a*10^(sr+sb-sa) / b, scaled by 10^sr.
	k := sr + sb - sa
	if k >= 0 && k <= 38 {
		if num, ok := mulChecked(a, pow10[k]); ok {
			return divRound(num, b), nil
		}
	} else if k < 0 && -k <= 38 {
		if den, ok := mulChecked(b, pow10[-k]); ok {
			return divRound(a, den), nil
		}
	}
	x, y := a.BigInt(), b.BigInt()
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(absI64(int64(k)))), nil)
	if k >= 0 {
		x.Mul(x, p)
	} else {
		y.Mul(y, p)
	}
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(new(big.Int).Abs(y)) >= 0 {
		if x.Sign()*y.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if q.BitLen() > 127 {
		return decimal128.Num{}, errDecimalOverflow
	}
	return decimal128.FromBigInt(q), nil
}

// decRem computes a % b for values at the same scale; the sign follows a.
func decRem(a, b decimal128.Num) (decimal128.Num, error) {
	if b.Sign() == 0 {
		return decimal128.Num{}, errDivByZero
	}
	if fitsInt64(a) && fitsInt64(b) {
		x, y := int64(a.LowBits()), int64(b.LowBits())
		if y == -1 {
			return decimal128.Num{}, nil
		}
		return decimal128.FromI64(x % y), nil
	}
	_, r := new(big.Int).QuoRem(a.BigInt(), b.BigInt(), new(big.Int))
	return decimal128.FromBigInt(r), nil
}
