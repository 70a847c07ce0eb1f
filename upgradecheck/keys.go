package upgradecheck

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KeyVerdict says whether one resource still needs an encryption key.
type KeyVerdict struct {
	Resource schema.GroupResource
	// Needed is true while the key may still seal values of the resource, or a
	// server still writes with it.
	Needed bool
	// Why says what was found, and what unblocks a needed key.
	Why string
}

// KeyReport is CheckKeyDrop's answer.
type KeyReport struct {
	// Key is the key asked about, as wire.KeyName gives it ("aescbc:key1").
	Key      string
	Verdicts []KeyVerdict
}

// CheckKeyDrop decides whether key (wire.KeyName's form, or a whole key identity)
// can be removed from every server's encryption configuration: it can once no server
// writes with it and, for every resource a server seals or opens with it, the
// resource's StorageState records that no value can be sealed with it any more (a
// migration to the current write key succeeded since the key last wrote, so
// persisted lists no hash with it, nor Unknown). Only in.States, in.StorageVersions,
// in.Now and in.Staleness are read.
func CheckKeyDrop(in *Input, key string) *KeyReport {
	key = wire.KeyName(key)
	r := &KeyReport{Key: key}
	matches := func(id string) bool { return wire.KeyName(id) == key }
	var grs []schema.GroupResource
	for gr, enc := range in.StorageVersions {
		for _, k := range enc.Keys {
			if matches(k.Write) || slices.ContainsFunc(k.Read, matches) {
				grs = appendMissingGR(grs, gr)
			}
		}
	}
	for gr, st := range in.States {
		if slices.ContainsFunc(st.PersistedKeys, matches) {
			grs = appendMissingGR(grs, gr)
		}
	}
	slices.SortFunc(grs, func(a, b schema.GroupResource) int {
		return strings.Compare(migrationapi.StorageStateName(a), migrationapi.StorageStateName(b))
	})
	for _, gr := range grs {
		r.Verdicts = append(r.Verdicts, keyVerdict(in, gr, matches))
	}
	return r
}

func keyVerdict(in *Input, gr schema.GroupResource, matches func(string) bool) KeyVerdict {
	v := KeyVerdict{Resource: gr, Needed: true}
	enc := in.StorageVersions[gr]
	var writers []string
	for id := range enc.Servers {
		if matches(wire.WriteKeyOf(enc.Keys, id)) {
			writers = append(writers, id)
		}
	}
	slices.Sort(writers)
	st, hasState := in.States[gr]
	switch {
	case len(writers) > 0:
		v.Why = fmt.Sprintf("server %s writes with it: make another key the first of the resource's providers on every server first", strings.Join(writers, ", "))
	case !hasState:
		v.Why = "it has no StorageState, so nothing records which keys seal its values"
	case in.Staleness > 0 && in.Now.Sub(st.Heartbeat) > in.Staleness:
		v.Why = fmt.Sprintf("its StorageState's heartbeat is %s old: the storage-migration controllers are not running", in.Now.Sub(st.Heartbeat).Round(time.Second))
	case slices.Contains(st.PersistedKeys, migrationapi.Unknown):
		v.Why = "its StorageState lists Unknown: values may be sealed with any key until a migration succeeds"
	case slices.ContainsFunc(st.PersistedKeys, matches):
		v.Why = "values written with it are not all migrated yet: the migration to the current write key has not succeeded (concord migrations)"
	default:
		v.Needed = false
		v.Why = "migrated: no value is sealed with it (persisted: " + strings.Join(st.PersistedKeys, ", ") + ")"
	}
	return v
}

func appendMissingGR(list []schema.GroupResource, gr schema.GroupResource) []schema.GroupResource {
	if slices.Contains(list, gr) {
		return list
	}
	return append(list, gr)
}

// Needed returns the resources that still need the key.
func (r *KeyReport) Needed() []KeyVerdict {
	var out []KeyVerdict
	for _, v := range r.Verdicts {
		if v.Needed {
			out = append(out, v)
		}
	}
	return out
}

// Print writes the report as `concord upgrade-check --drop-key` shows it: a table
// (RESOURCE, VERDICT, WHY) and a summary line.
func (r *KeyReport) Print(w io.Writer) error {
	fmt.Fprintf(w, "Encryption key %s: the resources it seals or opens on some server, or that recorded it:\n\n", r.Key)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RESOURCE\tVERDICT\tWHY\n")
	for _, v := range r.Verdicts {
		verdict := "ok"
		if v.Needed {
			verdict = "NEEDED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", migrationapi.StorageStateName(v.Resource), verdict, v.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(r.Needed()); n > 0 {
		_, err := fmt.Fprintf(w, "\nKey %s is still needed by %d resources: keep it in every server's --encryption-provider-config.\n", r.Key, n)
		return err
	}
	_, err := fmt.Fprintf(w, "\nKey %s seals no stored value and no server writes with it: it can be removed from every server's --encryption-provider-config.\n", r.Key)
	return err
}

// Err is nil when the key can be dropped, else an error matching ErrNotSafe.
func (r *KeyReport) Err() error {
	needed := r.Needed()
	if len(needed) == 0 {
		return nil
	}
	names := make([]string, len(needed))
	for i, v := range needed {
		names[i] = migrationapi.StorageStateName(v.Resource)
	}
	return fmt.Errorf("dropping key %s is %w: %d resources need it: %s", r.Key, ErrNotSafe, len(needed), strings.Join(names, ", "))
}
