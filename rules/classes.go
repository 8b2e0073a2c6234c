package rules

// KnownClass reports whether slug is one of Classes.
func KnownClass(slug string) bool {
	for _, c := range Classes {
		if c == slug {
			return true
		}
	}
	return false
}
