package configkeys

// Near returns the name in known nearest to name when it is near enough
// to be a likely typo (edit distance under a third of its length plus
// one, at least 2), "" otherwise.
func Near(name string, known []string) string {
	best, bestD := "", max(len(name)/3+1, 2)
	for _, k := range known {
		if d := EditDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// Nearest returns the name in known nearest to name however far it is:
// the likely typo when there is one (see Near), else the known name of
// least edit distance (the first of equals); "" only when known is empty.
func Nearest(name string, known []string) string {
	if best := Near(name, known); best != "" {
		return best
	}
	best, bestD := "", -1
	for _, k := range known {
		if d := EditDistance(name, k); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance counting a swap of two
// neighbouring letters as one edit (optimal string alignment).
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
