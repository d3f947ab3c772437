// A workflow's DAG drawn as SVG: the editor's preview and the instance page's graph. The
// layout (ranks, crossings, edge routes) is dagre's, vendored (admin/ui/vendor/README.md) and
// loaded as a classic script that defines the global `dagre`; this file only draws its result.
// Names and labels reach the SVG as text nodes, never as markup.

const SVG = 'http://www.w3.org/2000/svg';
const NODE_WIDTH = 168;
const NODE_HEIGHT = 46;

/** Builds an SVG element with attributes and children (strings become text nodes). */
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Cuts `text` to `max` characters with an ellipsis. */
function clip(text, max) {
  const value = String(text ?? '');
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

/**
 * Lays out `graph` (`{nodes, edges}` as the API has them) left to right. Edges naming a node
 * that is not (yet) there are left out, so a graph being edited can always be drawn.
 * Answers `{nodes: Map(name → {x, y}), edges: [{edge, points}], width, height}`.
 */
export function layout(graph) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 22, ranksep: 56, marginx: 14, marginy: 14 });
  g.setDefaultEdgeLabel(() => ({}));
  const names = new Set();
  for (const node of graph.nodes) {
    if (!node.name || names.has(node.name)) continue;
    names.add(node.name);
    g.setNode(node.name, { width: NODE_WIDTH, height: NODE_HEIGHT });
  }
  const drawn = graph.edges.filter((e) => names.has(e.from) && names.has(e.to) && e.from !== e.to);
  drawn.forEach((e, i) => g.setEdge(e.from, e.to, {}, String(i)));
  dagre.layout(g);
  const nodes = new Map([...names].map((name) => {
    const n = g.node(name);
    return [name, { x: Math.round(n.x), y: Math.round(n.y) }];
  }));
  const edges = drawn.map((edge, i) => ({ edge, points: g.edge(edge.from, edge.to, String(i)).points }));
  const size = g.graph();
  return { nodes, edges, width: Math.max(size.width || 0, 200), height: Math.max(size.height || 0, 80) };
}

/**
 * Draws `graph`. Options: `status(name)` → a node state (`SUCCEEDED`, `FAILED`, … or empty)
 * that colours the node; `subtitle(node)` → a second line; `selected` (a node name);
 * `onSelect(name, event)` when a node is clicked or chosen with Enter.
 */
export function drawGraph(graph, { status = () => '', subtitle = () => '', selected = null, onSelect = null } = {}) {
  const placed = layout(graph);
  const svg = s('svg', {
    class: 'wf-graph', width: placed.width, height: placed.height,
    viewBox: `0 0 ${placed.width} ${placed.height}`, role: 'img',
  },
  s('defs', {}, ['SUCCESS', 'FAILURE', 'ALWAYS'].map((when) =>
    s('marker', { id: `wf-arrow-${when}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', class: `wf-arrow wf-edge-${when}` })))));
  for (const { edge, points } of placed.edges) {
    const when = edge.when || 'SUCCESS';
    const d = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
    const path = s('path', { d, class: `wf-edge wf-edge-${when}`, 'marker-end': `url(#wf-arrow-${when})` },
      s('title', {}, `${edge.from} → ${edge.to} (${when})${edge.if ? ` if ${edge.if}` : ''}`));
    svg.append(path);
    // An edge's label: its condition when not SUCCESS, then its `if` (clipped; the title has it whole).
    const label = [when !== 'SUCCESS' ? when : '', edge.if ? `if ${clip(edge.if, 24)}` : ''].filter(Boolean).join(' ');
    if (label) {
      const mid = points[Math.floor(points.length / 2)];
      svg.append(s('text', { x: mid.x, y: mid.y - 4, class: `wf-edge-label wf-edge-${when}`, 'text-anchor': 'middle' }, label));
    }
  }
  for (const node of graph.nodes) {
    const at = placed.nodes.get(node.name);
    if (!at) continue;
    const state = status(node.name) || '';
    const classes = ['wf-node', state ? `wf-${state}` : '', node.disabled ? 'wf-disabled' : '',
      node.kind === 'SWITCH' ? 'wf-switch' : '',
      node.name === selected ? 'wf-selected' : ''].filter(Boolean).join(' ');
    const group = s('g', {
      class: classes, transform: `translate(${at.x - NODE_WIDTH / 2},${at.y - NODE_HEIGHT / 2})`,
      'data-node': node.name, 'data-status': state, tabindex: onSelect ? 0 : null,
    },
    s('rect', { width: NODE_WIDTH, height: NODE_HEIGHT, rx: 6, ry: 6 }),
    s('text', { x: 10, y: 19, class: 'wf-node-name' }, clip(node.name, 22)),
    s('text', { x: 10, y: 36, class: 'wf-node-sub' }, clip(subtitle(node), 26)),
    s('title', {}, [node.name, subtitle(node), state].filter(Boolean).join(' · ')));
    if (onSelect) {
      group.addEventListener('click', (event) => onSelect(node.name, event));
      group.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') onSelect(node.name, event);
      });
    }
    svg.append(group);
  }
  // Where the layout put each node, for the API's optional `x`/`y`.
  svg.positions = placed.nodes;
  return svg;
}
