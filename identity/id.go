package identity

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"strconv"
	"strings"
)

// DefaultServerID derives a server ID from the host name and the port the server
// serves on: "apiserver-" followed by the lower-case, unpadded base32 of the first 16
// bytes of the SHA-256 of both, each prefixed by its length. The same host and port
// always give the same ID, so a restarted server keeps its identity; two servers on
// one host differ by port.
func DefaultServerID(hostname string, port int) string {
	h := sha256.New()
	for _, part := range []string{hostname, strconv.Itoa(port)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	sum := h.Sum(nil)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16])
	return "apiserver-" + strings.ToLower(enc)
}
