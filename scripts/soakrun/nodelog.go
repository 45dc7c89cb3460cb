package main

import (
	"bufio"
	"os"
	"sort"
	"strconv"
	"strings"
)

// logSummary counts what a node wrote to its log: lines by level, panics, and the most
// frequent warning and error messages.
type logSummary struct {
	Lines  int
	Levels map[string]int
	Panics int
	Top    []msgCount // warnings and errors, most frequent first, at most 6
	Err    string
}

type msgCount struct {
	Level, Msg string
	N          int
}

func scanNodeLog(path string) logSummary {
	ls := logSummary{Levels: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		ls.Err = err.Error()
		return ls
	}
	defer f.Close()
	counts := map[[2]string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		ls.Lines++
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			ls.Panics++
		}
		level := field(line, "level")
		if level == "" {
			continue
		}
		ls.Levels[level]++
		if level == "WARN" || level == "ERROR" {
			counts[[2]string{level, field(line, "msg")}]++
		}
	}
	if err := sc.Err(); err != nil {
		ls.Err = err.Error()
	}
	ls.Top = topMessages(counts, 6)
	return ls
}

func topMessages(counts map[[2]string]int, n int) []msgCount {
	var out []msgCount
	for k, v := range counts {
		out = append(out, msgCount{Level: k[0], Msg: k[1], N: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Level+out[i].Msg < out[j].Level+out[j].Msg
	})
	return out[:min(n, len(out))]
}

// field reads key=value or key="quoted value" from a slog text line.
func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		if !strings.HasPrefix(line, key+"=") {
			return ""
		}
		i = -1
	}
	rest := line[i+len(key)+2:]
	if strings.HasPrefix(rest, `"`) {
		if v, err := strconv.QuotedPrefix(rest); err == nil {
			s, _ := strconv.Unquote(v)
			return s
		}
		return rest
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}
