// The course's own JupyterLab extension in a student's JupyterLab: the notebook toolbar's Validate button
// (button.js), and, on the course's JupyterHub, the Assignment List (assignments.js). Each replaces nbgrader's own
// plugin (@jupyter/nbgrader:validate-assignment; @jupyter/nbgrader:assignment-list and :menu), which the
// student's page config disables, so that what it says is the edition's language: every word comes from the page
// config, where the server extensions posref_jupyter.validate (`posrefValidate`) and
// posref_jupyter.assignment_list (`posrefAssignments`) put posref's catalogs' words; no file here holds one.
// Built by `make labextension`.
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILayoutRestorer } from '@jupyterlab/application';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { addAssignmentList } from './assignments';
import { addValidateButton } from './button';
import { pageWords } from './validation';

const VALIDATE = 'posrefValidate';
const ASSIGNMENTS = 'posrefAssignments';

function missing(option, extension) {
  console.error(`posref: no ${option} in the page (is the server extension ${extension} off?)`);
}

const validateButton = {
  id: '@posref/validate:plugin',
  description: "The course's Validate button, speaking the edition's language",
  autoStart: true,
  activate: app => {
    const words = pageWords(VALIDATE);
    if (words === null) {
      missing(VALIDATE, 'posref_jupyter.validate');
      return;
    }
    addValidateButton(app, words);
  }
};

const assignmentList = {
  id: '@posref/validate:assignment-list',
  description: "The course's panel of nbgrader's exchange (fetch, validate, submit), speaking the edition's language",
  autoStart: true,
  optional: [IMainMenu, ICommandPalette, ILayoutRestorer],
  activate: (app, mainMenu, palette, restorer) => {
    const words = pageWords(VALIDATE);
    const texts = pageWords(ASSIGNMENTS);
    if (words === null || texts === null) {
      missing(words === null ? VALIDATE : ASSIGNMENTS, 'posref_jupyter.validate or posref_jupyter.assignment_list');
      return;
    }
    addAssignmentList(app, texts, words, mainMenu, palette, restorer);
  }
};

export default [validateButton, assignmentList];
