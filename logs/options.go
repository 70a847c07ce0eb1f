package logs

import (
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// Options are the logging flags of a server process.
type Options struct {
	// Format is "text" or "json" (--logging-format).
	Format string
}

// NewOptions returns the defaults: klog's text lines.
func NewOptions() Options { return Options{Format: "text"} }

// AddFlags binds the options, and klog's -v and --vmodule, to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Format, "logging-format", o.Format, "Log format: text or json.")
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	fs.AddGoFlag(gofs.Lookup("v"))
	fs.AddGoFlag(gofs.Lookup("vmodule"))
}

// Validate reports an invalid --logging-format as one line saying what is allowed.
func (o *Options) Validate() []error {
	if o.Format != "text" && o.Format != "json" {
		return []error{fmt.Errorf("--logging-format %q is not allowed: use text or json", o.Format)}
	}
	return nil
}

// Apply switches klog to JSON lines when asked, at the verbosity -v sets.
func (o *Options) Apply() {
	if o.Format != "json" {
		return
	}
	logger := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{
		LogTimestamp: true,
		Verbosity:    verbosity(),
	})
	klog.SetLogger(logger)
}

// verbosity is the level -v enables.
func verbosity() int {
	for v := 10; v > 0; v-- {
		if klog.V(klog.Level(v)).Enabled() {
			return v
		}
	}
	return 0
}
