// Command hello is what binary's test installs: a command of the module that links
// in a moment.
package main

import "fmt"

func main() { fmt.Println("hello") }
