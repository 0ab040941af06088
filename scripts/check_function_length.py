#!/usr/bin/env python3
"""Fails when a C++ function in the given folders is longer than LIMIT lines, listing each one.

usage: check_function_length.py LIMIT DIR...

A brace-matching scan (comments, strings and raw strings skipped): a function is an outermost
'{...}' block that follows ')' (optionally const/override/noexcept/a trailing return type) and
is not an if/for/while/switch/catch body; lambdas count toward the function that holds them.
ctest runs it over ir/ and transforms/ (label unit), so a long function fails the suite."""
import re, sys, pathlib
limit = int(sys.argv[1]); paths = sys.argv[2:]
def strip(src):
    out=[]; i=0; n=len(src)
    while i<n:
        c=src[i]
        if src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j; out.append(' '*(j-i)); i=j
        elif src.startswith('/*',i):
            j=src.find('*/',i+2); j=n if j<0 else j+2; out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j
        elif c=='"' or c=="'":
            if c=='"' and i>0 and src[i-1]=='R':
                m=re.match(r'R"([^(]*)\(',src[i-1:]); d=m.group(1); j=src.find(')'+d+'"',i); j=n if j<0 else j+len(d)+2
            else:
                j=i+1
                while j<n and src[j]!=c:
                    j+=2 if src[j]=='\\' else 1
                j+=1
            out.append(re.sub(r'[^\n]',' ',src[i:j])); i=j
        else: out.append(c); i+=1
    return ''.join(out)
bad=0
for p in paths:
    for f in sorted(pathlib.Path(p).rglob('*')):
        if f.suffix not in ('.cpp','.h','.cu','.cuh'): continue
        s=strip(f.read_text(errors='replace'))
        stack=[]
        for m in re.finditer(r'[{}]',s):
            if m.group()=='{':
                head=s[max(0,m.start()-200):m.start()]
                is_fn=bool(re.search(r'\)\s*(const|override|noexcept|final|mutable|->\s*[\w:<>,\s*&]+|\s)*$',head)) and not re.search(r'\b(if|for|while|switch|catch)\s*\([^;{}]*\)\s*$',head)
                stack.append((m.start(),is_fn))
            elif stack:
                st,is_fn=stack.pop()
                if is_fn and not any(x[1] for x in stack):
                    a=s.count('\n',0,st)+1; b=s.count('\n',0,m.start())+1
                    if b-a+1>limit:
                        bad+=1; print(f"{f}:{a}: {b-a+1} lines")
sys.exit(1 if bad else 0)
