# Extracts the test_grammar/test_schema cases of llama.cpp's
# tests/test-grammar-integration.cpp (MIT, see LICENSE.llama.cpp) into JSON:
#   python3 extract-llama-cases.py PATH/test-grammar-integration.cpp > llama-grammar-integration.json
import re, json, sys
src = open(sys.argv[1]).read()
def lex(s, i):
    # returns list of tokens from position i: strings, '{', '}', ',', '(', ')', other identifiers
    out = []
    n = len(s)
    while i < n:
        c = s[i]
        if s.startswith('//', i):
            i = s.index('\n', i)
        elif c.isspace():
            i += 1
        elif s.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', s[i:])
            delim = m.group(1)
            start = i + m.end()
            end = s.index(')' + delim + '"', start)
            out.append(('str', s[start:end])); i = end + len(delim) + 2
        elif c == '"':
            j = i + 1; buf = ''
            while s[j] != '"':
                if s[j] == '\\':
                    e = s[j+1]
                    m = {'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '"': '"', "'": "'", '0': '\0'}
                    if e == 'x':
                        h = re.match(r'[0-9a-fA-F]+', s[j+2:]).group(0); buf += chr(int(h, 16)); j += 2 + len(h); continue
                    if e == 'u':
                        buf += chr(int(s[j+2:j+6], 16)); j += 6; continue
                    buf += m[e]; j += 2
                else:
                    buf += s[j]; j += 1
            out.append(('str', buf)); i = j + 1
        elif c in '{}(),;':
            out.append((c, c)); i += 1
            if c == ';': return out, i
        else:
            m = re.match(r'[A-Za-z_0-9:.<>]+', s[i:])
            if not m: i += 1; continue
            out.append(('id', m.group(0))); i += m.end()
    return out, i
cases = []
for m in re.finditer(r'\b(test_grammar|test_schema)\(\s*\n', src):
    toks, _ = lex(src, m.end())
    # merge adjacent strings
    merged = []
    for t in toks:
        if t[0] == 'str' and merged and merged[-1][0] == 'str':
            merged[-1] = ('str', merged[-1][1] + t[1])
        else:
            merged.append(t)
    strs = []; groups = []; depth = 0; cur = None
    for t in merged:
        if t[0] == '{':
            depth += 1
            if depth == 1: cur = []
        elif t[0] == '}':
            if depth == 1: groups.append(cur)
            depth -= 1
        elif t[0] == 'str':
            if depth == 0: strs.append(t[1])
            elif depth == 1: cur.append(t[1])
    if len(strs) != 2 or len(groups) != 2:
        print('skip', m.start(), strs[:1], len(groups), file=sys.stderr); continue
    cases.append({'kind': 'grammar' if m.group(1) == 'test_grammar' else 'schema', 'desc': strs[0], 'source': strs[1], 'pass': groups[0], 'fail': groups[1]})
print(json.dumps(cases, indent=1, ensure_ascii=False))
print(len(cases), file=sys.stderr)
