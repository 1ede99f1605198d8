package plan

// AppendArrayText appends an array's text form as PostgreSQL writes it:
// {a,b,NULL,"c d"}. elem returns element i and false when it is NULL.
// An element is quoted when it is empty, spells NULL, or holds a brace,
// comma, quote, backslash or white space; inside quotes, quotes and
// backslashes are escaped with a backslash.
func AppendArrayText(dst []byte, n int, elem func(i int) (string, bool)) []byte {
	dst = append(dst, '{')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		s, ok := elem(i)
		if !ok {
			dst = append(dst, "NULL"...)
			continue
		}
		if !needsArrayQuotes(s) {
			dst = append(dst, s...)
			continue
		}
		dst = append(dst, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				dst = append(dst, '\\')
			}
			dst = append(dst, s[j])
		}
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

func needsArrayQuotes(s string) bool {
	if s == "" || len(s) == 4 && (s[0]|0x20) == 'n' && (s[1]|0x20) == 'u' && (s[2]|0x20) == 'l' && (s[3]|0x20) == 'l' {
		return true
	}
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}
