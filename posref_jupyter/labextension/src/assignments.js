// The course's Assignment List, in a student's JupyterLab on the course's JupyterHub: the assignments released in
// nbgrader's exchange (Fetch), those fetched into the student's folder with their notebooks (open, Validate,
// Submit) and those handed in with each hand-in's feedback (Fetch feedback, view it). It replaces nbgrader's own
// panel (@jupyter/nbgrader:assignment-list, and its Nbgrader menu, which the hub's page config disables for
// students) so that the panel speaks the edition's language, and calls the same handlers of nbgrader's server
// extension (GET courses and assignments?course_id=, POST assignments/fetch, assignments/submit,
// assignments/fetch_feedback: each answers {success, value}, value the course's whole list again where it
// succeeded) and, for a notebook's Validate, the toolbar button's request and dialog (validation.js). Every word
// it shows is one the server extension posref_jupyter.assignment_list put in the page (`posrefAssignments`),
// or, for Validate, posref_jupyter.validate (`posrefValidate`), from posref's catalogs; this file holds none.
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { Menu, Widget } from '@lumino/widgets';
import { element, fill, request, tell, validateAndShow } from './validation';
import './assignments.css';

const OPEN = 'posref:open-assignment-list';

/** The panel's sections, one per status of nbgrader's (in the order it lists them): its heading, and what an empty one says. */
function sections(texts) {
  return {
    released: { heading: texts.released, empty: texts.no_released },
    fetched: { heading: texts.fetched, empty: texts.no_fetched },
    submitted: { heading: texts.submitted, empty: texts.no_submitted }
  };
}

/** What a dialog says where nbgrader could not do what a button asked, per route: [its title, its sentence]. */
function refusals(texts) {
  return {
    'assignments/fetch': [texts.not_fetched_title, texts.not_fetched],
    'assignments/submit': [texts.not_submitted_title, texts.not_submitted],
    'assignments/fetch_feedback': [texts.no_feedback_title, texts.no_feedback]
  };
}

function button(label, onClick, className = 'jp-mod-styled jp-mod-accept') {
  const node = element('button', label, `jp-Button ${className}`);
  node.onclick = onClick;
  return node;
}

/** The panel's content: the course (a choice where the exchange has several), then one section per status. */
class AssignmentList extends Widget {
  constructor(app, texts, words) {
    super();
    this.app = app;
    this.texts = texts;
    this.words = words;
    this.course = undefined;
    this.addClass('posref-assignments');
    const bar = element('div', '', 'posref-assignments-bar');
    this.courses = document.createElement('select');
    this.courses.className = 'posref-assignments-course';
    this.courses.onchange = () => this.load(this.courses.value);
    this.courseLabel = element('label', texts.course);
    this.courseLabel.append(this.courses);
    this.courseLabel.hidden = true;
    const refresh = button(texts.refresh, () => this.refresh(), 'jp-mod-styled posref-assignments-refresh');
    bar.append(this.courseLabel, refresh);
    this.node.append(bar);
    this.sections = sections(texts);
    this.lists = {};
    for (const [status, { heading }] of Object.entries(this.sections)) {
      const section = element('section', '', `posref-assignments-${status}`);
      const list = element('div', '', 'posref-assignments-items');
      section.append(element('h2', heading), list);
      this.node.append(section);
      this.lists[status] = list;
    }
    this.refresh();
  }

  /** Every list shows `text` alone (`className`: posref-assignments-loading, -error, -empty), `detail` under it. */
  showAll(text, className, detail) {
    for (const list of Object.values(this.lists)) {
      list.replaceChildren(element('p', text, className));
      if (detail !== undefined) {
        list.append(element('pre', String(detail), 'posref-assignments-detail'));
      }
    }
  }

  /** The exchange's courses, then the chosen one's assignments. */
  async refresh() {
    this.showAll(this.texts.loading, 'posref-assignments-loading');
    let reply;
    try {
      reply = await request('courses');
    } catch (error) {
      this.showAll(fill(this.texts.cannot_reach, { error }), 'posref-assignments-error');
      return;
    }
    if (reply.success !== true) {
      this.showAll(this.texts.cannot_list, 'posref-assignments-error', reply.value);
      return;
    }
    const courses = reply.value;
    if (courses.length === 0) {
      this.showAll(this.texts.no_courses, 'posref-assignments-empty');
      return;
    }
    this.courses.replaceChildren(...courses.map(id => element('option', id)));
    this.courseLabel.hidden = courses.length < 2;
    const course = courses.includes(this.course) ? this.course : courses[0];
    this.courses.value = course;
    await this.load(course);
  }

  /** The assignments of `course`. */
  async load(course) {
    this.course = course;
    this.showAll(this.texts.loading, 'posref-assignments-loading');
    await this.act(() => request('assignments?' + new URLSearchParams({ course_id: course })), { listing: true });
  }

  /**
   * `call`'s answer shown: nbgrader's list; where nbgrader refused what a button asked (it answers with its reason or
   * error, not the list), `refused(that)`, a dialog, the list shown staying; while `listing`, its error in every
   * section. No answer at all is said in every section while `listing` (nothing is listed yet), in a dialog after a
   * button (the list shown stays).
   */
  async act(call, { refused, listing } = {}) {
    let reply;
    try {
      reply = await call();
    } catch (error) {
      const said = fill(this.texts.cannot_reach, { error });
      if (listing) {
        this.showAll(said, 'posref-assignments-error');
      } else {
        await tell(this.texts.error_title, said, this.words);
      }
      return;
    }
    if (reply.success === true) {
      this.show(reply.value);
    } else if (refused) {
      await refused(reply.value);
    } else {
      this.showAll(this.texts.cannot_list, 'posref-assignments-error', reply.value);
    }
  }

  /** nbgrader's list of `assignments`, each in its status's section (a status nbgrader adds, `removed`, is not). */
  show(assignments) {
    for (const [status, { empty: said }] of Object.entries(this.sections)) {
      const items = assignments.filter(a => a.status === status).map(a => this.item(a));
      const empty = element('p', said, 'posref-assignments-empty');
      this.lists[status].replaceChildren(...(items.length ? items : [empty]));
    }
  }

  item(assignment) {
    const node = element('div', '', 'posref-assignment');
    node.dataset.assignment = assignment.assignment_id;
    const row = element('div', '', 'posref-assignment-row');
    const name = element('span', assignment.assignment_id, 'posref-assignment-name');
    row.append(name);
    node.append(row);
    const course = { course_id: assignment.course_id, assignment_id: assignment.assignment_id };
    const texts = this.texts;
    if (assignment.status === 'released') {
      row.append(this.action(texts.fetch, texts.fetching, 'assignments/fetch', course));
    } else if (assignment.status === 'fetched') {
      const notebooks = element('ul', '', 'posref-assignment-notebooks');
      for (const notebook of assignment.notebooks) {
        notebooks.append(this.notebook(notebook));
      }
      row.append(this.action(texts.submit, texts.submitting, 'assignments/submit', course));
      node.append(notebooks);
    } else {
      row.append(this.action(texts.fetch_feedback, texts.fetching_feedback, 'assignments/fetch_feedback', course));
      const submissions = element('ul', '', 'posref-assignment-submissions');
      for (const submission of assignment.submissions) {
        submissions.append(this.submission(submission));
      }
      node.append(submissions);
    }
    return node;
  }

  /**
   * A button that POSTs `body` to `route`, saying `busy` meanwhile, and shows the list nbgrader answers, or in a
   * dialog what nbgrader says where it could not (`refusals`: each route's title and sentence).
   */
  action(label, busy, route, body) {
    const [title, sentence] = refusals(this.texts)[route];
    const refused = async reason => {
      const said = document.createElement('div');
      said.append(element('p', sentence), element('pre', String(reason)));
      await tell(title, new Widget({ node: said }), this.words);
    };
    const node = button(label, async () => {
      node.textContent = busy;
      node.disabled = true;
      try {
        await this.act(() => request(route, body), { refused });
      } finally {
        node.textContent = label;
        node.disabled = false;
      }
    });
    return node;
  }

  /** A fetched notebook: its name opens it, its Validate validates the saved file. */
  notebook(notebook) {
    const node = element('li', '', 'posref-assignment-notebook');
    const open = element('a', notebook.notebook_id, 'posref-assignment-open');
    open.href = '#';
    open.onclick = event => {
      event.preventDefault();
      this.app.commands.execute('docmanager:open', { path: notebook.path });
    };
    const words = this.words;
    const validate = button(
      words.validate,
      async () => {
        const say = (label, enabled) => {
          validate.textContent = label;
          validate.disabled = !enabled;
        };
        const passed = await validateAndShow(notebook.path, words, say);
        validate.classList.toggle('posref-passed', passed);
        validate.classList.toggle('posref-failed', !passed);
      },
      'jp-mod-styled posref-assignment-validate'
    );
    node.append(open, validate);
    return node;
  }

  /** One hand-in: when, and its feedback where there is some (fetched: a link to its folder). */
  submission(submission) {
    const node = element('li', submission.timestamp, 'posref-assignment-submission');
    if (submission.has_local_feedback && !submission.feedback_updated) {
      const view = element('a', this.texts.view_feedback, 'posref-assignment-feedback');
      view.href = '#';
      view.onclick = event => {
        event.preventDefault();
        this.app.commands.execute('filebrowser:go-to-path', { path: submission.local_feedback_path });
      };
      node.append(' ', view);
    } else if (submission.has_exchange_feedback) {
      node.append(' ', element('span', this.texts.feedback_ready, 'posref-assignment-feedback-ready'));
    }
    return node;
  }
}

/** The panel, its command and its place in the menu bar (the course's pages name it Nbgrader → Assignment List). */
export function addAssignmentList(app, texts, words, mainMenu, palette, restorer) {
  const tracker = new WidgetTracker({ namespace: 'posref-assignment-list' });
  let panel;
  app.commands.addCommand(OPEN, {
    label: texts.assignment_list,
    execute: () => {
      if (!panel || panel.isDisposed) {
        panel = new MainAreaWidget({ content: new AssignmentList(app, texts, words) });
        panel.id = 'posref-assignment-list';
        panel.title.label = texts.assignment_list;
        panel.title.closable = true;
      }
      if (!tracker.has(panel)) {
        tracker.add(panel);
      }
      if (!panel.isAttached) {
        app.shell.add(panel, 'main');
      }
      app.shell.activateById(panel.id);
    }
  });
  if (mainMenu) {
    const menu = new Menu({ commands: app.commands });
    menu.id = 'posref-mainmenu-nbgrader';
    menu.title.label = texts.menu;
    menu.addItem({ command: OPEN });
    mainMenu.addMenu(menu);
  }
  if (palette) {
    palette.addItem({ command: OPEN, category: texts.menu });
  }
  if (restorer) {
    restorer.restore(tracker, { command: OPEN, name: () => 'posref-assignment-list' });
  }
}

