//go:build unix && !linux

package stdio

// liveMember reports true: without /proc, a zombie cannot be told from a
// live process, so a group whose only members are zombies still counts as
// alive, until init reaps them.
func liveMember(int) bool { return true }
