package logs_test

import (
	"testing"

	"github.com/concordproject/concord/logs"
	"github.com/spf13/pflag"
)

// --logging-format takes text or json, and the flags include klog's -v and --vmodule.
func TestOptions(t *testing.T) {
	o := logs.NewOptions()
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--logging-format=json", "-v=2", "--vmodule=options=3"}); err != nil {
		t.Fatal(err)
	}
	if o.Format != "json" || len(o.Validate()) != 0 {
		t.Fatalf("parsed %q, %v", o.Format, o.Validate())
	}
	o.Format = "xml"
	if errs := o.Validate(); len(errs) != 1 || errs[0].Error() != `--logging-format "xml" is not allowed: use text or json` {
		t.Fatalf("Validate of xml: %v", errs)
	}
}
