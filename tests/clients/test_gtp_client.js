// Attaches to the engine the way Sabaki does, through @sabaki/gtp 3.0.0, and checks what Sabaki
// would parse.  Usage: node tests/clients/test_gtp_client.js PYTHON [ENGINE ARGS...]
// Run by tests/clients/test_sabaki_client.py; install the library with `npm ci --prefix tests`.
'use strict'

const assert = require('assert')
const path = require('path')
const {Controller, ControllerStateTracker} = require('@sabaki/gtp')

const root = path.resolve(__dirname, '..', '..')
const [python, ...engineArgs] = process.argv.slice(2)

// Sabaki's parseAnalysis (src/modules/analysis.js), as the client does it.
function sabakiParse(line) {
  return line
    .split(/\s*info\s+/)
    .slice(1)
    .map(x => x.trim())
    .map(x => {
      let matchPV = x.match(/(pass|[A-Za-z]\d+)(\s+(pass|[A-Za-z]\d+))*$/)
      if (matchPV == null) return null
      let passIndex = matchPV[0].indexOf('pass')
      if (passIndex < 0) passIndex = Infinity
      return [
        x.slice(0, matchPV.index).trim().split(/\s+/).slice(0, -1),
        matchPV[0].slice(0, passIndex).split(/\s+/).filter(x => x.length >= 2)
      ]
    })
    .filter(x => x != null)
    .map(([tokens, pv]) => {
      let keys = tokens.filter((_, i) => i % 2 === 0)
      let values = tokens.filter((_, i) => i % 2 === 1)
      keys.push('pv')
      values.push(pv)
      return keys.reduce((acc, x, i) => ((acc[x] = values[i]), acc), {})
    })
    .filter(({move}) => move.match(/^[A-Za-z]\d+$/))
    .map(({move, visits, winrate, scoreLead, pv}) => ({
      move,
      visits: +visits,
      winrate: winrate.includes('.') ? +winrate * 100 : +winrate / 100,
      scoreLead: scoreLead != null ? +scoreLead : null,
      pv
    }))
}

const VERTEX = /^(pass|[A-HJ-T]\d{1,2})$/

function checkInfoLine(line, kind, size) {
  assert(line.startsWith('info '), `not an info line: ${line}`)
  let body = line
  let ownership = null
  let at = line.indexOf(' ownership ')
  if (at >= 0) {
    body = line.slice(0, at)
    ownership = line.slice(at + ' ownership '.length).trim().split(/\s+/)
  }
  let segments = body.split(/\s*info\s+/).slice(1)
  assert(segments.length > 0)
  for (let seg of segments) {
    let tokens = seg.trim().split(/\s+/)
    let i = tokens.indexOf('pv')
    assert(i >= 0, `no pv: ${seg}`)
    let pv = tokens.slice(i + 1)
    assert(pv.length > 0 && pv.every(t => VERTEX.test(t)), `pv must come last, vertices only: ${seg}`)
    let pairs = tokens.slice(0, i)
    assert(pairs.length % 2 === 0, `keys and values must pair up: ${seg}`)
    let kv = {}
    for (let j = 0; j < pairs.length; j += 2) kv[pairs[j]] = pairs[j + 1]
    for (let key of ['move', 'visits', 'winrate', 'prior', 'lcb', 'order'])
      assert(key in kv, `missing ${key}: ${seg}`)
    assert(/^\d+$/.test(kv.visits), seg)
    for (let key of ['winrate', 'prior', 'lcb']) {
      if (kind === 'lz') {
        assert(/^\d+$/.test(kv[key]) && +kv[key] <= 10000, `lz ${key} must be an integer 0..10000: ${seg}`)
      } else {
        assert(/^\d+\.\d+$/.test(kv[key]) && +kv[key] <= 1, `kata ${key} must be a float in [0,1] with a point: ${seg}`)
      }
    }
    if (kind === 'kata') assert(/^-?\d+\.\d+$/.test(kv.scoreLead), `kata scoreLead: ${seg}`)
  }
  if (ownership != null) {
    assert.strictEqual(ownership.length, size * size)
    assert(ownership.every(x => /^-?\d+\.\d+$/.test(x) && Math.abs(+x) <= 1))
  }
  let parsed = sabakiParse(body)
  let expected = segments.filter(s => !/^move pass\b/.test(s.trim())).length
  assert.strictEqual(parsed.length, expected, `Sabaki would drop candidates from: ${line.slice(0, 300)}`)
  for (let p of parsed) {
    assert(p.winrate >= 0 && p.winrate <= 100, `winrate as Sabaki reads it: ${p.winrate}`)
    assert(p.visits >= 0 && p.pv.length >= 1 && p.pv[0] === p.move)
  }
}

async function analyze(controller, kind, size) {
  let infos = []
  let stop = null
  let stopSentAt = null
  let response = await controller.sendCommand({name: `${kind}-analyze`, args: ['B', '10']}, ({line}) => {
    if (!line.startsWith('info ')) return
    infos.push(line)
    if (infos.length === 3 && stop == null) {
      // Sabaki stops an analysis by sending any command, e.g. protocol_version.
      stopSentAt = Date.now()
      stop = controller.sendCommand({name: 'protocol_version'})
    }
  })
  assert(!response.error, `${kind}-analyze failed: ${response.content}`)
  assert(stop != null && infos.length >= 3, `${kind}-analyze ended before 3 info lines`)
  let proto = await stop
  assert.strictEqual(proto.content, '2', 'the interrupting command is answered after the analysis')
  for (let line of infos) checkInfoLine(line, kind, size)
  return {kind, lines: infos.length, stopSentAt}
}

async function main() {
  assert(python, 'usage: node test_gtp_client.js PYTHON [ENGINE ARGS...]')
  let env = Object.assign({}, process.env, {PYTHONPATH: root + path.delimiter + (process.env.PYTHONPATH || '')})
  let controller = new Controller(python, ['-m', 'engine', ...engineArgs], {cwd: root, env})
  controller.start()
  let stderr = []
  controller.on('stderr', ({content}) => stderr.push(content))

  // Sabaki pipelines these four before reading anything.
  let [name, version, protocol, commands] = await Promise.all(
    ['name', 'version', 'protocol_version', 'list_commands'].map(n => controller.sendCommand({name: n}))
  )
  for (let r of [name, version, protocol, commands]) assert(!r.error, r.content)
  assert(version.content.includes('.'), 'version needs a dot (Lizzie)')
  assert.strictEqual(protocol.content, '2')
  let listed = commands.content.split('\n')
  for (let c of listed) assert.strictEqual(c, c.trim(), `trailing space in list_commands: '${c}'`)
  for (let c of ['lz-analyze', 'kata-analyze', 'lz-genmove_analyze', 'kata-genmove_analyze', 'undo'])
    assert(listed.includes(c), `${c} not listed`)
  assert(!listed.includes('analyze') && !listed.includes('genmove_analyze'), 'bare analyze must not be listed')

  // A sync in one burst, komi before boardsize, same-colour plays and a pass, then undo.
  let burst = [
    {name: 'komi', args: ['6.5']}, {name: 'boardsize', args: ['9']}, {name: 'clear_board'},
    {name: 'play', args: ['B', 'E5']}, {name: 'play', args: ['B', 'c3']}, {name: 'play', args: ['W', 'pass']},
    {name: 'play', args: ['W', 'G7']}, {name: 'play', args: ['B', 'D7']}, {name: 'undo'}
  ]
  let results = await Promise.all(burst.map(c => controller.sendCommand(c)))
  results.forEach((r, i) => assert(!r.error, `${burst[i].name}: ${r.content}`))

  // The state tracker Sabaki uses for incremental syncs (knows 'undo' from list_commands).
  let tracker = new ControllerStateTracker(controller)
  await tracker.sync({
    komi: 7.5, boardsize: [9, 9],
    history: [{name: 'play', args: ['B', 'E5']}, {name: 'play', args: ['W', 'G7']}, {name: 'play', args: ['B', 'C3']}]
  })
  let board = await controller.sendCommand({name: 'showboard'})
  assert(/komi 7\.5/.test(board.content) && /White to move, move 4/.test(board.content), board.content)

  let summary = []
  summary.push(await analyze(controller, 'kata', 9))
  summary.push(await analyze(controller, 'lz', 9))

  let gen = await controller.sendCommand({name: 'genmove', args: ['W']})
  assert(!gen.error && /^([A-HJ-T]\d|pass|resign)$/i.test(gen.content), gen.content)
  await controller.stop()
  console.log(JSON.stringify({ok: true, summary}))
}

main().catch(err => {
  console.error(err && err.stack ? err.stack : String(err))
  process.exit(1)
})
