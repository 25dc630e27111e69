# gogui-regress tests of the engine, run by tests/clients/test_gogui.py as
#   java -jar gogui-regress.jar -long -output DIR \
#     "python -m engine --size 9 --weights uniform --seed 1 --threads 1 --visits 8" engine.tst
# (gogui-regress starts the engine in this folder: loadsgf paths are relative to it).
#
# GNU Go's regression format: a numbered command is a test; the "#? [regex]" after it is
# matched (Java regex, DOTALL and MULTILINE, whole string) against the reply as GoGui reads it:
# everything after the first space of "=[id] body", trimmed.  "#? [regex]*" marks a test
# expected to fail; a "?" reply is a failure whatever the regex, and a success that matches
# ".*" would be reported as an unexpected PASS, so "#? [.*]*" says "this command must be
# refused".  Unnumbered commands are setup; a failure there counts as an error.
#
# 'uniform' is the engine's net-less evaluator (uniform policy, even value): the policy
# heatmap is 1.000 on every legal point and 0.000 elsewhere, and with 8 visits and one thread
# every reply is the same on every run.

# -- identification -----------------------------------------------------------------------------
1 protocol_version
#? [2]
2 name
#? [goengine]
3 version
#? [[0-9]+\.[0-9]+\.[0-9]+]
4 known_command gogui-analyze_commands
#? [true]
5 known_command no-such-command
#? [false]

# -- GoGui's analyze commands: the list, then every command in it --------------------------------
# (the list is literal: tests/clients/test_gogui.py checks that each command in it is tested below)
10 gogui-analyze_commands
#? [dboard/Policy heatmap/goengine-policy %m\ngfx/Policy labels/goengine-policy_gfx %m\ndboard/Ownership/goengine-ownership %m\npspairs/Visit counts/goengine-visits %m\nvar/Principal variation/goengine-pv %m\nparam/Engine parameters/goengine-param]

boardsize 9
clear_board
komi 7
11 play b e5
#? []
12 play w d4
#? []
# dboard: nine rows of nine numbers (the policy, scaled to a maximum of 1; 0 on the stones)
13 goengine-policy b
#? [(1\.000 ){8}1\.000\n(1\.000 ){8}1\.000\n(1\.000 ){8}1\.000\n(1\.000 ){8}1\.000\n(1\.000 ){4}0\.000( 1\.000){4}\n(1\.000 ){3}0\.000( 1\.000){5}\n(1\.000 ){8}1\.000\n(1\.000 ){8}1\.000\n(1\.000 ){8}1\.000]
# gfx: INFLUENCE, LABEL and TEXT lines
14 goengine-policy_gfx b
#? [INFLUENCE( [A-HJ][1-9] [01]\.[0-9][0-9])+\nLABEL( [A-HJ][1-9] [0-9]+)+\nTEXT pass [0-9.]+%]
# dboard: the ownership, -1 (White) to 1 (Black)
15 goengine-ownership b
#? [(-?[01]\.[0-9][0-9]( -?[01]\.[0-9][0-9]){8}\n){8}-?[01]\.[0-9][0-9]( -?[01]\.[0-9][0-9]){8}]
# pspairs: vertex and visit count pairs
16 goengine-visits b
#? [[A-HJ][1-9] [0-9]+( [A-HJ][1-9] [0-9]+)*]
# var: colour and vertex pairs, starting with the colour asked for
17 goengine-pv w
#? [w [A-HJ][1-9]( [bw] [A-HJ][1-9])*]
# param: "[type] name value" lines; a value set is read back
18 goengine-param
#? [\[string\] visits 8\n.*\n\[list/chinese/tromp-taylor/japanese\] rules chinese]
19 goengine-param visits 9
#? []
20 goengine-param
#? [\[string\] visits 9\n.*]
21 goengine-param no_such_parameter 1
#? [.*]*
22 goengine-param visits 8
#? []

# -- play, genmove, undo ------------------------------------------------------------------------
30 play b e5
#? [.*]*
31 play w z99
#? [.*]*
32 play x c3
#? [.*]*
33 undo
#? []
# legal only because the undo took D4 back
34 play w d4
#? []
35 genmove b
#? [[A-HJ][1-9]|PASS|pass|resign]
36 undo
#? []
37 undo
#? []
38 undo
#? []
39 undo
#? [.*]*

# -- loadsgf and final_score --------------------------------------------------------------------
40 loadsgf wall9.sgf
#? [black]
41 final_score
#? [B\+2\.0]
42 final_status_list dead
#? []
43 loadsgf wall9.sgf 5
#? [black]
44 showboard
#? [.*\n 3 \. \. \. \. \. \. \. \. \.  3\n 2 \. \. \. \. X O \. \. \.  2\n 1 \. \. \. \. X O \. \. \.  1\n.*]
45 loadsgf no-such-file.sgf
#? [.*]*

# -- errors -------------------------------------------------------------------------------------
50 no-such-command
#? [.*]*
51 boardsize 0
#? [.*]*
52 komi seven
#? [.*]*
