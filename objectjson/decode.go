package objectjson

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error of Unmarshal and UnmarshalObject: the data is not
// one JSON value of the accepted kind.
var ErrSyntax = errors.New("invalid JSON")

// ErrDuplicateKey is wrapped by the error of UnmarshalObjectStrict when an object in
// the data repeats a key.
var ErrDuplicateKey = errors.New("duplicate key")

// maxDepth is how deeply arrays and objects may nest, as in encoding/json.
const maxDepth = 10000

// UnmarshalObject parses data, one JSON object or null with optional white space
// around it, as k8s.io/apimachinery/pkg/util/json.Unmarshal into a
// map[string]interface{} does. null gives a nil map and no error; any other non-object
// value is an error.
func UnmarshalObject(data []byte) (map[string]interface{}, error) {
	v, err := Unmarshal(data)
	if err != nil {
		return nil, err
	}
	return asObject(v)
}

// asObject returns v, a decoded top-level value, as an object: null gives a nil map.
func asObject(v interface{}) (map[string]interface{}, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]interface{}:
		return v, nil
	default:
		return nil, fmt.Errorf("%w: cannot unmarshal %T into an object", ErrSyntax, v)
	}
}

// UnmarshalObjectStrict is UnmarshalObject for callers that refuse repeated keys: if
// any object in data, at any depth, has a key twice, it returns an error wrapping
// ErrDuplicateKey (and no map). Finding out costs nothing beyond UnmarshalObject's
// own work. The error does not say which key: a caller that must name it decodes again
// with a decoder that reports paths (sigs.k8s.io/json's UnmarshalStrict, for one).
func UnmarshalObjectStrict(data []byte) (map[string]interface{}, error) {
	d := decoder{data: data}
	v, err := d.top()
	if err != nil {
		return nil, err
	}
	if d.duplicate {
		return nil, ErrDuplicateKey
	}
	return asObject(v)
}

// Unmarshal parses data, one JSON value with optional white space around it, into
// the value k8s.io/apimachinery/pkg/util/json.Unmarshal gives into an interface{}:
// nil, bool, string, int64 (an integer literal without '.' that fits), float64 (any
// other number), []interface{} or map[string]interface{}.
func Unmarshal(data []byte) (interface{}, error) {
	d := decoder{data: data}
	return d.top()
}

// top parses all of d.data as one value with optional white space around it.
func (d *decoder) top() (interface{}, error) {
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected %q after the top-level value", d.data[d.pos])
	}
	return v, nil
}

type decoder struct {
	data  []byte
	pos   int
	depth int
	// duplicate records that some object repeated a key (the last value won).
	duplicate bool
}

func (d *decoder) errorf(format string, args ...interface{}) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value parses the value at d.pos (no white space before it).
func (d *decoder) value() (interface{}, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end of input")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		return nil, d.errorf("unexpected %q looking for a value", c)
	}
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.errorf("invalid literal, want %s", word)
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) enter() error {
	if d.depth++; d.depth > maxDepth {
		return d.errorf("exceeded max depth of %d", maxDepth)
	}
	return nil
}

func (d *decoder) object() (interface{}, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	m := map[string]interface{}{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return m, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("want a string key")
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("want ':' after an object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		n := len(m)
		m[k] = v
		if len(m) == n {
			d.duplicate = true
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in an object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			d.depth--
			return m, nil
		default:
			return nil, d.errorf("want ',' or '}' in an object")
		}
	}
}

func (d *decoder) array() (interface{}, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	a := []interface{}{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return a, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in an array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			d.depth--
			return a, nil
		default:
			return nil, d.errorf("want ',' or ']' in an array")
		}
	}
}

// number parses a number per RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() (interface{}, error) {
	start := d.pos
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return nil, d.errorf("invalid number")
	}
	fraction := false
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		fraction = true
		if digits() == 0 {
			return nil, d.errorf("invalid number: no digit after '.'")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.errorf("invalid number: no digit in the exponent")
		}
	}
	s := string(d.data[start:d.pos])
	if !fraction {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, d.errorf("number %s out of range", s)
	}
	return f, nil
}

// string parses the string at d.pos (its opening quote).
func (d *decoder) string() (string, error) {
	d.pos++ // '"'
	start := d.pos
	// Fast path: no escape, no control character, ASCII or valid UTF-8.
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			d.pos = i + 1
			return string(d.data[start:i]), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size - 1
		}
	}
	return d.slowString(start)
}

// slowString unescapes the string starting at start, after its opening quote.
func (d *decoder) slowString(start int) (string, error) {
	out := make([]byte, 0, 2*(len(d.data)-start))
	i := start
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(out), nil
		case c < 0x20:
			d.pos = i
			return "", d.errorf("control character %q in a string", c)
		case c == '\\':
			i++
			if i >= len(d.data) {
				d.pos = i
				return "", d.errorf("unexpected end of input in a string escape")
			}
			switch e := d.data[i]; e {
			case '"', '\\', '/':
				out = append(out, e)
				i++
			case 'b':
				out, i = append(out, '\b'), i+1
			case 'f':
				out, i = append(out, '\f'), i+1
			case 'n':
				out, i = append(out, '\n'), i+1
			case 'r':
				out, i = append(out, '\r'), i+1
			case 't':
				out, i = append(out, '\t'), i+1
			case 'u':
				r, ok := hex4(d.data, i+1)
				if !ok {
					d.pos = i
					return "", d.errorf("invalid \\u escape")
				}
				i += 5
				if utf16.IsSurrogate(r) {
					// A pair is one rune; anything else makes the first half U+FFFD.
					r2, ok2 := rune(-1), false
					if i+1 < len(d.data) && d.data[i] == '\\' && d.data[i+1] == 'u' {
						r2, ok2 = hex4(d.data, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						i += 6
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				d.pos = i
				return "", d.errorf("invalid escape \\%c", e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d.data[i:i+size]...)
			}
			i += size
		}
	}
	d.pos = i
	return "", d.errorf("unexpected end of input in a string")
}

// hex4 reads the four hex digits at data[i:i+4].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// LeadingString returns the value of data's first key if data is a JSON object whose
// first key is key and whose value there is a string without escapes, as a part of
// data: the apiVersion of an object Marshal wrote (it sorts the keys), read without
// decoding the rest. ok false says nothing about the key, only that it was not found
// so; data is not checked beyond that value.
func LeadingString(data []byte, key string) (value []byte, ok bool) {
	d := decoder{data: data}
	d.skipSpace()
	if !d.consume('{') {
		return nil, false
	}
	d.skipSpace()
	if k, ok := d.plainString(); !ok || string(k) != key {
		return nil, false
	}
	d.skipSpace()
	if !d.consume(':') {
		return nil, false
	}
	d.skipSpace()
	return d.plainString()
}

// consume steps over c if it is the next byte.
func (d *decoder) consume(c byte) bool {
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// plainString returns the content of the string at d.pos if it has no escape and no
// control character, and steps over it.
func (d *decoder) plainString() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	for i := d.pos; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			s := d.data[d.pos:i]
			d.pos = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}
