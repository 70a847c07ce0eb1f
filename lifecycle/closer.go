package lifecycle

import "context"

// Closer is the component of something held until the group stops: its Run waits
// until it is asked to stop, then calls release (etcd's client, a listener, an Event
// recorder).
func Closer(name string, release func()) Component {
	return Component{Name: name, Run: func(ctx context.Context) error {
		<-ctx.Done()
		release()
		return nil
	}}
}
