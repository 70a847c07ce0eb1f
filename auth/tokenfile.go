package auth

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
)

var (
	// ErrInvalidTokenFile means a static token file cannot be parsed; the message names the
	// file and line.
	ErrInvalidTokenFile = errors.New("invalid token file")
	// ErrDuplicateToken means one token was given to two users (two lines of a token file,
	// or a file token equal to the admin or loopback token).
	ErrDuplicateToken = errors.New("duplicate token")
)

// LoadTokenFile reads a Kubernetes static token file: CSV lines of
//
//	token,user,uid[,"group1,group2"]
//
// Blank lines and lines starting with # are ignored; spaces after commas are trimmed, and
// so are spaces around each group. It returns the users by token, with the groups of the
// file only (NewTokenAuthenticator adds GroupAuthenticated).
//
// Errors wrap ErrInvalidTokenFile and name the line: fewer than 3 or more than 4 columns
// (unquoted groups), an empty token or user name, a token containing white space, or a
// token seen before (also wrapping ErrDuplicateToken). Tokens never appear in errors.
func LoadTokenFile(path string) (map[string]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTokenFile, err)
	}
	defer f.Close()

	r := csv.NewReader(f)
	r.Comment = '#'
	r.FieldsPerRecord = -1 // checked below, with a better message
	r.TrimLeadingSpace = true
	r.ReuseRecord = true

	users := map[string]User{}
	firstLine := map[string]int{}
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			return users, nil
		}
		if err != nil {
			// *csv.ParseError already says "record on line N".
			return nil, fmt.Errorf("%w %s: %w", ErrInvalidTokenFile, path, err)
		}
		line, _ := r.FieldPos(0)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w %s, line %d: %s", ErrInvalidTokenFile, path, line, fmt.Sprintf(format, args...))
		}

		switch n := len(record); {
		case n == 1 && strings.TrimSpace(record[0]) == "":
			continue // a line of spaces only
		case n < 3:
			return nil, bad("want 3 or 4 columns (token,user,uid[,groups]), found %d", n)
		case n > 4:
			return nil, bad("want 3 or 4 columns (token,user,uid[,groups]), found %d; quote a list of groups: \"group1,group2\"", n)
		}
		token, name, uid := strings.TrimSpace(record[0]), strings.TrimSpace(record[1]), strings.TrimSpace(record[2])
		switch {
		case token == "":
			return nil, bad("empty token")
		case strings.ContainsFunc(token, unicode.IsSpace):
			return nil, bad("token contains white space")
		case name == "":
			return nil, bad("empty user name")
		}
		if first, ok := firstLine[token]; ok {
			return nil, fmt.Errorf("%w %s, line %d: %w (first on line %d)", ErrInvalidTokenFile, path, line, ErrDuplicateToken, first)
		}
		firstLine[token] = line

		u := User{Name: name, UID: uid}
		if len(record) == 4 {
			for g := range strings.SplitSeq(record[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		users[token] = u
	}
}
